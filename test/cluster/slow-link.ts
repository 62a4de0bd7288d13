/**
 * Latency and loss on a node's links, in user space (schedule 6): this machine's kernel has no
 * netem queueing discipline. Run in a node's namespace, it listens on the node's address for each
 * port its server offers and forwards to the server, which then listens on the node's loopback
 * only; every chunk, either way, is held `delay ± jitter` ms (order kept, as on one TCP
 * connection), and `loss`% of them a further 200–600 ms, what a lost segment costs TCP (its
 * retransmission timeout is at least 200 ms). So every pair of nodes sees the delay once each way.
 *   bun test/cluster/slow-link.ts '{"links": [{"listen": "10.0.0.10:5432", "target": "127.0.0.1:5432"}],
 *     "delayMs": 150, "jitterMs": 50, "lossPercent": 2, "seed": 1}'
 */
import { type Socket, connect, createServer } from 'node:net';
import { prng } from '../money/schedule';

export type SlowLinks = {
  links: { listen: string; target: string }[];
  delayMs: number;
  jitterMs: number;
  lossPercent: number;
  seed: number;
};

const split = (address: string) => {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
};

/**
 * Forwards `from` to `to`, each chunk (and the end) at its own time, in order: one queue a direction,
 * drained by one timer at a time, since timers of different delays may fire out of order.
 */
function relay(from: Socket, to: Socket, options: SlowLinks, random: () => number) {
  const queue: { at: number; send: () => void }[] = [];
  let last = 0;
  let waiting = false;
  const drain = () => {
    waiting = false;
    while (queue.length > 0 && queue[0]!.at <= Date.now()) queue.shift()!.send();
    if (queue.length > 0) {
      waiting = true;
      setTimeout(drain, queue[0]!.at - Date.now());
    }
  };
  const hold = (send: () => void) => {
    let at = Date.now() + options.delayMs + (random() * 2 - 1) * options.jitterMs;
    if (random() * 100 < options.lossPercent) at += 200 + random() * 400;
    last = Math.max(at, last);
    queue.push({ at: last, send });
    if (!waiting) {
      waiting = true;
      setTimeout(drain, queue[0]!.at - Date.now());
    }
  };
  from.on('data', (chunk) =>
    hold(() => {
      if (!to.destroyed) to.write(chunk);
    }),
  );
  from.on('end', () => hold(() => to.end()));
  // A clean close lets what is queued and buffered reach the other side; a reset cuts it.
  from.on('close', (hadError) => hold(() => (hadError ? to.destroy() : to.end())));
  from.on('error', () => {});
}

function main() {
  const options = JSON.parse(process.argv[2] ?? '{}') as SlowLinks;
  const random = prng(options.seed);
  for (const link of options.links) {
    const listen = split(link.listen);
    const target = split(link.target);
    createServer((client) => {
      const upstream = connect(target.port, target.host);
      relay(client, upstream, options, random);
      relay(upstream, client, options, random);
    }).listen(listen.port, listen.host);
  }
  process.stdout.write(`slow links: ${options.links.map((link) => `${link.listen} → ${link.target}`).join(', ')}\n`);
}

if (import.meta.main) main();
