/**
 * A TCP proxy to PostgreSQL for the tests of lost connections: `decide` says what becomes of each chunk on its
 * way, `pass` it, `drop` it (the connection stays open, as under a partition where packets vanish) or `cut` the
 * connection it travels on (both sides closed, as TCP does after its retries). `abandonAll` closes the clients' ends
 * only: the server's stay open and hear nothing more, as when a client gives up (or its process dies) during a
 * partition and its FIN never crosses it.
 */
import { type Socket, connect, createServer } from 'node:net';

export type Direction = 'to server' | 'to client';
export type Fate = 'pass' | 'drop' | 'cut';

export async function postgresProxy(target: URL, decide: (chunk: Buffer, direction: Direction) => Fate) {
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  const abandoned = new WeakSet<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    const pair = { client, upstream };
    pairs.add(pair);
    client.on('close', () => pairs.delete(pair));
    const both = [client, upstream];
    for (const socket of both) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    const relay = (from: Socket, to: Socket, direction: Direction) =>
      from.on('data', (chunk: Buffer) => {
        if (abandoned.has(upstream)) return;
        const fate = decide(chunk, direction);
        if (fate === 'pass') to.write(chunk);
        else if (fate === 'cut') for (const socket of both) socket.destroy();
      });
    relay(client, upstream, 'to server');
    relay(upstream, client, 'to client');
    client.on('close', () => {
      if (!abandoned.has(upstream)) upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    /** Closes the clients' ends of every connection; the server's stay open, silent, until `close`. */
    abandonAll: () => {
      for (const { client, upstream } of pairs) {
        abandoned.add(upstream);
        client.destroy();
      }
    },
    /** Closes every connection through the proxy; new ones are still accepted. */
    cutAll: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
