/** The timers and outgoing callbacks of an operator simulator: all cancelled or awaited when it stops, so a test ends clean. */
export function createScheduler() {
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const sends = new Set<Promise<unknown>>();
  let stopped = false;
  return {
    /** Runs `action` after `ms`, unless the simulator stopped first. */
    later(ms: number, action: () => void): void {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!stopped) action();
      }, ms);
      timers.add(timer);
    },
    /** A send in flight, awaited by `stop`. */
    track<T>(promise: Promise<T>): Promise<T> {
      sends.add(promise);
      return promise.finally(() => sends.delete(promise));
    },
    async stop(): Promise<void> {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...sends]);
    },
  };
}
