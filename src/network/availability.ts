/**
 * An aggregator's own word on which of its networks take payments now (pawaPay's availability), read into the routes'
 * health, where a provider closed for an operation takes that route out until it reopens (./routes.ts).
 */
import type { RouteHealth } from '../services/networks/route-health';
import type { Connector } from './adapter';

/** How often an aggregator's availability is read (pawaPay's operations team changes it by hand, rarely). */
const AVAILABILITY_EVERY_MS = 60_000;

/**
 * Reads each aggregator's availability at once and then every minute into the routes' health, where
 * a provider closed for an operation takes that route out until it reopens. A read that fails
 * changes nothing (the route's own faults still count). Returns what stops it.
 */
export function watchAvailability(
  connectors: readonly Connector[],
  health: RouteHealth,
  warn: (message: string, fields: Record<string, unknown>) => void,
): () => void {
  const watched = connectors.filter((connector) => connector.availability);
  const read = async () => {
    for (const connector of watched) {
      try {
        await health.setAvailability(connector.name, await connector.availability!());
      } catch (error) {
        warn('availability not read', {
          route: connector.name,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  };
  if (watched.length === 0) return () => {};
  void read();
  const timer = setInterval(() => void read(), AVAILABILITY_EVERY_MS);
  timer.unref?.();
  return () => clearInterval(timer);
}
