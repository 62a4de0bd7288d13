/**
 * The API process (Bun) over a raw socket: a request the HTTP server cannot form a URL for (no
 * `Host`, an empty one, one that is no host) is a small JSON 400, never Bun's development error page
 * with the working directory, stack frames and source lines. A well-formed request is served.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { ROOT, eventually, uniqueTaskQueue } from '../helpers';

let api: ChildProcess;
let port = 0;
let output = '';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

type RawAnswer = { status: number; headers: string; body: string; size: number };

/** Sends `text` as it is and reads the answer until the server closes the connection (5 s at most). */
function rawRequest(text: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    const deadline = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within 5 s to ${JSON.stringify(text)}`));
    }, 5_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error) => {
      clearTimeout(deadline);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(deadline);
      const raw = Buffer.concat(chunks).toString('utf8');
      const split = raw.indexOf('\r\n\r\n');
      const headers = split < 0 ? raw : raw.slice(0, split);
      resolve({
        status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(raw)?.[1] ?? 0),
        headers,
        body: split < 0 ? '' : raw.slice(split + 4),
        size: raw.length,
      });
    });
  });
}

beforeAll(async () => {
  port = await freePort();
  // NODE_ENV is not `production` here, as in a plain `bun src/server.ts`: Elysia would then ask Bun for development mode.
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    TASK_QUEUE: uniqueTaskQueue('raw'),
  };
  delete env.API_DEVELOPMENT_MODE;
  api = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  api.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  api.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await eventually(
    'the API process to answer',
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status === 200,
    30_000,
  );
});

afterAll(() => {
  api?.kill('SIGTERM');
});

const malformed: [string, string][] = [
  ['HTTP/1.0 without Host', 'GET /healthz HTTP/1.0\r\n\r\n'],
  ['an empty Host', 'GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n'],
  ['a Host that is no host', 'GET /healthz HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n'],
  ['an API path with a Host that is no host', 'GET /api/contacts HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n'],
];

for (const [name, text] of malformed) {
  test(`${name}: 400 with the API's error body, no stack, no path`, async () => {
    const answer = await rawRequest(text);
    expect(answer.status).toBe(400);
    expect(answer.headers.toLowerCase()).toContain('content-type: application/json');
    expect(JSON.parse(answer.body)).toEqual({ detail: 'Invalid or missing Host header.' });
    expect(answer.size).toBeLessThan(1_000);
    expect(answer.body).not.toContain(ROOT);
    expect(answer.body).not.toMatch(/stack|\.ts:\d+|<html/i);
  });
}

test('HTTP/1.1 with a valid Host is served', async () => {
  const answer = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toMatchObject({ status: 'ok' });
  // The malformed requests were answered before the pipeline: nothing failed on the way.
  expect(output).not.toContain('"level":"error"');
});
