/**
 * A gRPC proxy in front of the tests' Temporal server that forwards every call but the methods it
 * is told to stall: those it accepts and never answers, as a server still settling after a restart
 * may. gRPC runs over HTTP/2 without TLS here (the SDKs' connections to the dev server), so each
 * incoming stream is forwarded as a stream of one HTTP/2 session to the real server: its headers,
 * data and trailers, and a cancellation either way.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

/** The gRPC paths of the Schedule calls the worker makes at start. */
export const SCHEDULE_SETUP_PATHS = ['CreateSchedule', 'DescribeSchedule', 'UpdateSchedule'].map(
  (method) => `/temporal.api.workflowservice.v1.WorkflowService/${method}`,
);

export type StallingProxy = {
  /** host:port to give as TEMPORAL_ADDRESS. */
  address: string;
  /** The paths of the calls held unanswered so far, in arrival order. */
  stalled: () => string[];
  close: () => Promise<void>;
};

const { NGHTTP2_FLAG_END_STREAM, NGHTTP2_CANCEL, NGHTTP2_INTERNAL_ERROR } = http2.constants;

/** Forwards one call to the real server and its answer back, trailers included. */
function forward(
  upstream: http2.ClientHttp2Session,
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
): void {
  const call = upstream.request(headers);
  let trailers: http2.OutgoingHttpHeaders = {};
  stream.pipe(call);
  call.on('response', (responseHeaders, flags) => {
    if (stream.destroyed) return;
    // A trailers-only answer (an error status) ends the stream with its headers.
    if ((flags ?? 0) & NGHTTP2_FLAG_END_STREAM) return stream.respond(responseHeaders, { endStream: true });
    stream.respond(responseHeaders, { waitForTrailers: true });
    call.pipe(stream);
  });
  call.on('trailers', (received) => (trailers = received));
  stream.on('wantTrailers', () => stream.sendTrailers(trailers));
  call.on('error', () => stream.destroyed || stream.close(NGHTTP2_INTERNAL_ERROR));
  stream.on('error', () => {});
  // The caller gave up (a deadline, a shutdown): so does the call upstream.
  stream.on('close', () => call.closed || call.close(NGHTTP2_CANCEL));
}

/** Starts the proxy on a free port of 127.0.0.1 in front of `target` (host:port). */
export async function startStallingProxy(
  target: string,
  stallPaths: readonly string[] = SCHEDULE_SETUP_PATHS,
): Promise<StallingProxy> {
  const upstream = http2.connect(`http://${target}`);
  upstream.on('error', () => {});
  const stalled: string[] = [];
  const held = new Set<http2.ServerHttp2Stream>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {});
  });
  server.on('stream', (opened, headers) => {
    const stream = opened as http2.ServerHttp2Stream;
    const path = String(headers[':path']);
    if (!stallPaths.includes(path)) return forward(upstream, stream, headers);
    stalled.push(path);
    held.add(stream);
    stream.on('close', () => held.delete(stream));
    stream.on('error', () => {});
    stream.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    stalled: () => [...stalled],
    close: async () => {
      for (const stream of held) stream.close(NGHTTP2_CANCEL);
      for (const session of sessions) session.destroy();
      upstream.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
