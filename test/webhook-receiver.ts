/**
 * A local HTTPS webhook receiver for tests: listens on 127.0.0.1 only, with a self-signed
 * certificate made at test time by `openssl`, answers each path from a script of replies, and
 * records every request it gets.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeSelfSignedCertificate } from '../scripts/infra.mjs';

export type Certificate = { certFile: string; cert: string; key: string };

/** A self-signed certificate for 127.0.0.1 and localhost, valid for a day (made with `openssl`). */
export function makeCertificate(): Certificate {
  const directory = mkdtempSync(join(process.env.TEST_DATA_DIR ?? tmpdir(), 'receiver-cert-'));
  const { certFile, keyFile } = makeSelfSignedCertificate(directory) as { certFile: string; keyFile: string };
  return { certFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

export type Reply = { status: number; body?: string; delayMs?: number };
export type ReceivedRequest = { path: string; headers: Record<string, string>; body: string; receivedAt: number };

export type Receiver = {
  port: number;
  /** `https://127.0.0.1:<port><path>` */
  url: (path: string) => string;
  /** Replies for a path, in order; `then` answers every request after them (default 200). */
  script: (path: string, replies: Reply[], then?: Reply) => void;
  requests: (path: string) => ReceivedRequest[];
  /** The most requests of a path that were ever unanswered at once. */
  maxInFlight: (path: string) => number;
  /** Requests of every path unanswered now, and the most there were at once since the last `resetMostInFlight`. */
  inFlightNow: () => number;
  mostInFlight: () => number;
  resetMostInFlight: () => void;
  close: () => Promise<void>;
};

export async function startReceiver(certificate: Certificate): Promise<Receiver> {
  const scripts = new Map<string, { replies: Reply[]; then: Reply }>();
  const received = new Map<string, ReceivedRequest[]>();
  const inFlight = new Map<string, { now: number; most: number }>();
  const total = { now: 0, most: 0 };
  const server: Server = createServer({ key: certificate.key, cert: certificate.cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = (request.url ?? '/').split('?')[0] ?? '/';
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const list = received.get(path) ?? [];
      list.push({ path, headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() });
      received.set(path, list);
      const script = scripts.get(path);
      const reply = script?.replies.shift() ?? script?.then ?? { status: 200 };
      const count = inFlight.get(path) ?? { now: 0, most: 0 };
      count.now += 1;
      count.most = Math.max(count.most, count.now);
      inFlight.set(path, count);
      total.now += 1;
      total.most = Math.max(total.most, total.now);
      response.on('close', () => {
        count.now -= 1;
        total.now -= 1;
      });
      const answer = () => {
        if (response.destroyed) return;
        response.writeHead(reply.status, { 'content-type': 'text/plain' });
        response.end(reply.body ?? `status ${reply.status}`);
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path) => `https://127.0.0.1:${port}${path}`,
    script: (path, replies, then = { status: 200 }) => scripts.set(path, { replies: [...replies], then }),
    requests: (path) => received.get(path) ?? [],
    maxInFlight: (path) => inFlight.get(path)?.most ?? 0,
    inFlightNow: () => total.now,
    mostInFlight: () => total.most,
    resetMostInFlight: () => {
      total.most = total.now;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
