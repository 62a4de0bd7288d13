/**
 * The load balancer's configuration (test/cluster/load-balancer.ts) run by a real HAProxy in front
 * of two nodes: one cut from its database but still passing its health check (the first second of
 * a partition), which takes requests and never answers them, and one that answers. M-Pesa sends a
 * paybill confirmation once and waits 10 s at most: in the cluster's 30-minute schedule 10, two
 * confirmations that reached a node just cut from PostgreSQL were lost, and with them the
 * subscribers' payments. An operator's callback must reach the other node in time; a merchant's
 * request and the paybill validation must never be sent twice by the balancer. And an operator that
 * keeps its connections alive must never send a callback on one the balancer is closing for
 * idleness (in schedule 6, across slow links, such a confirmation was lost before it reached the
 * balancer): every callback is answered with its connection closed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/infra.mjs';
import { CALLBACK_ANSWER_SECONDS, loadBalancerConfig } from '../cluster/load-balancer';
import { eventually } from '../helpers';

/** What M-Pesa waits for an answer to its confirmation (test/simulators/daraja.ts `send`). */
const OPERATOR_PATIENCE_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'collections-lb-'));
const received: { node: string; path: string; body: string }[] = [];
let haproxy: ChildProcess;
let url = '';
const nodes: ReturnType<typeof Bun.serve>[] = [];

/** A node: `/readyz` passes; every other request is recorded, then answered, or held forever by the cut node. */
function node(name: string, answers: boolean) {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === '/readyz') return Response.json({ status: 'ok' });
      received.push({ node: name, path, body: await request.text() });
      if (!answers) await new Promise(() => {});
      return Response.json({ ResultCode: 0, ResultDesc: 'Accepted' });
    },
  });
}

beforeAll(async () => {
  nodes.push(node('cut', false), node('answering', true));
  const port = await freePort();
  const unavailableFile = join(dir, '503.http');
  writeFileSync(unavailableFile, 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\n\r\n');
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    loadBalancerConfig({
      bind: `127.0.0.1:${port}`,
      nodes: { 'app-a': `127.0.0.1:${nodes[0]!.port}`, 'app-b': `127.0.0.1:${nodes[1]!.port}` },
      adminSocket: join(dir, 'admin.sock'),
      unavailableFile,
    }),
  );
  haproxy = spawn('haproxy', ['-W', '-db', '-f', config], { stdio: 'ignore' });
  url = `http://127.0.0.1:${port}`;
  await eventually('HAProxy', async () => (await fetch(`${url}/readyz`).catch(() => null))?.status === 200);
});

afterAll(() => {
  haproxy?.kill('SIGKILL');
  for (const server of nodes) server.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/** POSTs `body` to `path` through the balancer, giving up after `patienceMs`: the status, or null. */
async function post(path: string, body: string, patienceMs: number): Promise<number | null> {
  const answer = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body,
    signal: AbortSignal.timeout(patienceMs),
  }).catch(() => null);
  return answer?.status ?? null;
}

test("an operator's callback that the node it reached does not answer is answered by the other node, within the operator's patience", async () => {
  // Two in a row: round robin sends one of them to the cut node first, whichever that is.
  const started = Date.now();
  const statuses = await Promise.all(
    ['RCT0000001', 'RCT0000002'].map((receipt) =>
      post('/network/paybill/confirmation', JSON.stringify({ TransID: receipt }), OPERATOR_PATIENCE_MS),
    ),
  );
  expect(statuses).toEqual([200, 200]);
  expect(Date.now() - started).toBeLessThan(OPERATOR_PATIENCE_MS);
  const answered = received.filter((each) => each.node === 'answering').map((each) => JSON.parse(each.body).TransID);
  expect(answered.sort()).toEqual(['RCT0000001', 'RCT0000002']);
  expect(received.some((each) => each.node === 'cut' && each.path === '/network/paybill/confirmation')).toBe(true);
});

test("a merchant's request and the paybill validation are never sent twice by the balancer", async () => {
  for (const path of ['/api/payments', '/network/paybill/validation']) {
    const before = received.length;
    const statuses = await Promise.all(
      ['first', 'second'].map((name) => post(path, JSON.stringify({ name }), (CALLBACK_ANSWER_SECONDS + 2) * 1000)),
    );
    // One reached the answering node and was answered; the other is held by the cut node and never sent again.
    expect(statuses.sort()).toEqual([200, null].sort());
    const sent = received.slice(before).filter((each) => each.path === path);
    expect(sent.map((each) => each.node).sort()).toEqual(['answering', 'cut']);
  }
});

/** One request on a raw connection: the answer's head, and whether the balancer then closed the connection. */
function exchange(port: number, path: string): Promise<{ head: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ head: text.split('\r\n\r\n')[0]!, closed: false });
    }, 2000);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
    });
    socket.on('end', () => {
      clearTimeout(timer);
      resolve({ head: text.split('\r\n\r\n')[0]!, closed: true });
    });
    socket.on('error', reject);
    const body = JSON.stringify({ TransID: 'RCT0000003' });
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: lb\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  });
}

test("every operator's callback is answered with its connection closed, so none is sent on a connection the balancer is closing", async () => {
  nodes[0]!.stop(true);
  const port = Number(new URL(url).port);
  // The cut node gone, its check fails within two seconds; until then a request may be redispatched.
  await eventually('the cut node taken out', async () => {
    const { head } = await exchange(port, '/network/paybill/confirmation');
    return head.startsWith('HTTP/1.1 200');
  });
  for (const path of ['/network/paybill/confirmation', '/network/paybill/validation', '/network/results']) {
    const { head, closed } = await exchange(port, path);
    expect({ path, closed }).toEqual({ path, closed: true });
    expect(head.toLowerCase()).toContain('connection: close');
  }
  // A merchant's connection is kept alive: a merchant repeats a request whose connection was reset.
  const merchant = await exchange(port, '/api/payments');
  expect(merchant.head).toStartWith('HTTP/1.1 200');
  expect(merchant.closed).toBe(false);
});
