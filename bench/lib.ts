/** Measuring helpers for bench/run.ts: bounded load loops, percentiles, RSS sampling, tables. */
import { readdirSync, readFileSync } from 'node:fs';

export type Run = {
  ops: number;
  errors: number;
  seconds: number;
  rate: number;
  latencies: number[];
  firstError?: string;
};

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** `concurrency` clients each running `op` back to back, until `seconds` pass or `maxOps` ran. */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  maxOps: number,
  op: (index: number) => Promise<void>,
): Promise<Run> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const client = async () => {
    while (performance.now() < deadline && next < maxOps) {
      const index = next++;
      const began = performance.now();
      try {
        await op(index);
        latencies.push(performance.now() - began);
      } catch (error) {
        errors += 1;
        firstError ??= String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsed = (performance.now() - start) / 1000;
  return { ops: latencies.length, errors, seconds: elapsed, rate: latencies.length / elapsed, latencies, firstError };
}

/** Starts `op` at a fixed `rate` per second (open loop, at most `maxInFlight` outstanding) for `seconds` or `maxOps`. */
export async function openLoop(
  rate: number,
  seconds: number,
  maxOps: number,
  op: (index: number) => Promise<void>,
  maxInFlight = 1000,
): Promise<Run> {
  const latencies: number[] = [];
  const pending = new Set<Promise<void>>();
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const total = Math.min(maxOps, Math.max(1, Math.floor(rate * seconds)));
  for (let index = 0; index < total; index += 1) {
    const due = start + (index * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    if (pending.size >= maxInFlight) await Promise.race(pending);
    const began = performance.now();
    const task = op(index).then(
      () => void latencies.push(performance.now() - began),
      (error: unknown) => {
        errors += 1;
        firstError ??= String(error);
      },
    );
    const tracked = task.finally(() => pending.delete(tracked));
    pending.add(tracked);
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - start) / 1000;
  return { ops: latencies.length, errors, seconds: elapsed, rate: latencies.length / elapsed, latencies, firstError };
}

/** Sequential repetitions of `op` (after `warmup` unmeasured ones), bounded in count and time. */
export async function repeat(
  iterations: number,
  seconds: number,
  op: () => Promise<void>,
  warmup = 3,
): Promise<number[]> {
  for (let index = 0; index < warmup; index += 1) await op();
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  while (latencies.length < iterations && performance.now() < deadline) {
    const began = performance.now();
    await op();
    latencies.push(performance.now() - began);
  }
  return latencies;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** Samples VmRSS of named processes every `intervalMs`; `phase` tags the samples. */
export class RssSampler {
  private timer: ReturnType<typeof setInterval> | undefined;
  private phase = 'idle';
  readonly peaks = new Map<string, Map<string, number>>();

  constructor(
    private readonly pids: Record<string, number>,
    private readonly intervalMs = 200,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  setPhase(phase: string): void {
    this.sample();
    this.phase = phase;
  }

  stop(): void {
    this.sample();
    if (this.timer) clearInterval(this.timer);
  }

  /** The kernel's own high-water mark (VmHWM) of each process, in kB. */
  highWaterMarks(): Record<string, number | null> {
    return Object.fromEntries(Object.entries(this.pids).map(([name, pid]) => [name, statusKb(pid, 'VmHWM')]));
  }

  private sample(): void {
    for (const [name, pid] of Object.entries(this.pids)) {
      const rss = statusKb(pid, 'VmRSS');
      if (rss === null) continue;
      const byPhase = this.peaks.get(name) ?? new Map<string, number>();
      byPhase.set(this.phase, Math.max(byPhase.get(this.phase) ?? 0, rss));
      this.peaks.set(name, byPhase);
    }
  }
}

export const ms = (value: number): string => (Number.isFinite(value) ? value.toFixed(1) : 'n/a');
export const ratio = (value: number): string => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');
export const mb = (kb: number | null | undefined): string => (kb == null ? 'n/a' : (kb / 1024).toFixed(0));

/** A Markdown table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** CPU seconds (user + system) a process has used so far; null once it is gone. */
function cpuSeconds(pid: number): number | null {
  try {
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** Every process whose command is `name` (PostgreSQL runs one per connection). */
function pidsNamed(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/**
 * CPU used by each named process (and by every `postgres` process together) over a phase: where a
 * saturated phase spends the machine's cores. Counts per-connection PostgreSQL backends that ended
 * during the phase only up to their last reading, so PostgreSQL's share is a lower bound.
 */
export class CpuMeter {
  private readonly before = new Map<string, number>();
  private readonly postgresBefore = new Map<number, number>();
  private began = 0;

  constructor(private readonly pids: Record<string, number>) {}

  start(): void {
    this.began = performance.now();
    for (const [name, pid] of Object.entries(this.pids)) this.before.set(name, cpuSeconds(pid) ?? 0);
    for (const pid of pidsNamed('postgres')) this.postgresBefore.set(pid, cpuSeconds(pid) ?? 0);
  }

  /** Share of one core (1.0 = one core busy all the time) per process over the phase. */
  stop(): Record<string, number> {
    const seconds = (performance.now() - this.began) / 1000;
    const shares: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.pids))
      shares[name] = ((cpuSeconds(pid) ?? 0) - (this.before.get(name) ?? 0)) / seconds;
    let postgres = 0;
    for (const pid of pidsNamed('postgres')) postgres += (cpuSeconds(pid) ?? 0) - (this.postgresBefore.get(pid) ?? 0);
    shares.PostgreSQL = postgres / seconds;
    return shares;
  }
}

/** Whether a process is alive (not gone, not a zombie waiting for its parent). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Sends `signal` to `pid` and waits (bounded) until it has ended; SIGKILL after `graceMs`. Whether it had to be killed. */
export async function stopPid(
  pid: number,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 30_000,
): Promise<{ seconds: number; forced: boolean }> {
  const began = performance.now();
  let forced = signal === 'SIGKILL';
  try {
    process.kill(pid, signal);
  } catch {
    return { seconds: 0, forced };
  }
  while (alive(pid)) {
    if (!forced && performance.now() - began > graceMs) {
      forced = true;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
    await Bun.sleep(50);
  }
  return { seconds: (performance.now() - began) / 1000, forced };
}

/** Waits (bounded) until `test` holds, checking every `everyMs`. Whether it did. */
export async function waitUntil(
  test: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 200,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await test()) return true;
    if (Date.now() > deadline) return false;
    await Bun.sleep(everyMs);
  }
}

/** How many of `times` (epoch ms) fall in each whole window of `windowMs` from `from` to `to`. */
export function windowCounts(times: number[], from: number, to: number, windowMs: number): number[] {
  const counts = Array.from({ length: Math.max(0, Math.floor((to - from) / windowMs)) }, () => 0);
  for (const time of times) {
    const index = Math.floor((time - from) / windowMs);
    if (index >= 0 && index < counts.length) counts[index]! += 1;
  }
  return counts;
}

/** A TCP port nothing listens on (taken from the system, then closed). */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The highest VmRSS an RssSampler saw for `name` over all its phases, in kB. */
export function peakOf(sampler: RssSampler, name: string): number | undefined {
  const byPhase = sampler.peaks.get(name);
  return byPhase ? Math.max(...byPhase.values()) : undefined;
}

/** `op` over every item, at most `size` at once, in order of the items; the results in the same order. */
export async function inBatches<T, R>(
  items: T[],
  size: number,
  op: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += size) {
    results.push(
      ...(await Promise.all(items.slice(start, start + size).map((item, offset) => op(item, start + offset)))),
    );
  }
  return results;
}
