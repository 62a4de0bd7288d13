/**
 * One route at a time, for the routing core (./routes.ts): a send journaled and judged, the evidence
 * that settles an operation in doubt, and a call counted for the route's health.
 * docs/going-live.md#in-doubt-is-not-refused
 */
import type { Sql } from '../db';
import type { Network } from '../domain/networks';
import { entryById, type JournalEntry } from '../services/networks/entries';
import { markAccepted, markInDoubt, markRefused, markSent } from '../services/networks/journal';
import type { RouteHealth, RouteOperation } from '../services/networks/route-health';
import { OperationInDoubtError, type Connector, type Recorded } from './adapter';
import { neverSent } from './operator-http';
import { faultOf, routeError } from './route-faults';

/** What every step of routing reads: the journal's database, the routes' health and the connectors by name. */
export type Core = { sql: Sql; health: RouteHealth; connectors: readonly Connector[]; byName: Map<string, Connector> };

/**
 * What came of sending on one route: taken there, refused for the route's reasons (try the next), or an answer to
 * return as it is.
 */
type Sent<T> = { taken: T } | { routeFault: string; result?: T } | { answer: T };

/**
 * A route's answer as the journal reads it: taken (with the operator's reference when it gave one), its own fault, or
 * the subscriber's refusal.
 */
export type Verdict = { accepted: string | null | true } | { fault: string } | { refused: true };

/** Runs one call on a route, counting its outcome for the route's health: a thrown error is a route fault. */
export async function measured<T>(
  core: Core,
  connector: Connector,
  network: Network,
  operation: RouteOperation,
  call: () => Promise<T>,
): Promise<T> {
  const key = { network: network.name, route: connector.name, operation };
  try {
    const result = await call();
    await core.health.succeeded(key);
    return result;
  } catch (error) {
    if (routeError(error)) await core.health.faulted(key, faultOf(error));
    throw error;
  }
}

/**
 * What the route's own evidence says of a journaled operation whose outcome is not known (recorded,
 * then a crash or a call still under way; or in doubt): `present` when its status query finds it;
 * `absent` only when it finds nothing and the route's in-flight window has passed since the last
 * send (the entry is then refused, so the reference may be sent again); `wait` when it finds nothing
 * yet while the request may still be on its way (docs/going-live.md#in-doubt-is-not-refused).
 */
export async function evidenceOf(
  core: Core,
  connector: Connector & Required<Pick<Connector, 'lookup'>>,
  network: Network,
  entry: JournalEntry,
): Promise<'present' | 'absent' | 'wait'> {
  const current = (await entryById(core.sql, entry.id)) ?? entry;
  const found = await connector.lookup({
    kind: current.kind,
    network,
    reference: current.reference,
    operatorReference: current.operatorReference,
  });
  if (found === 'present') return 'present';
  const since = current.sinceSentSeconds;
  if (since !== null && since < connector.inFlight.windowSeconds) return 'wait';
  // After a route fault (in doubt) the route comes after the others for it; after a crash (recorded) it keeps its
  // place.
  await markRefused(core.sql, current.id, current.state === 'in_doubt' ? (current.fault ?? 'no answer') : null);
  return 'absent';
}

/**
 * Sends on one route, journaled: recorded first; then accepted, refused, or in doubt (no answer, a
 * 5xx, or a resend's own trouble: the first send may still be processed). In doubt throws: the
 * activity asks again, and the operation stays on this route until its evidence settles it.
 */
export async function sendOn<T>(
  core: Core,
  connector: Connector,
  network: Network,
  entry: JournalEntry,
  operation: RouteOperation,
  send: () => Promise<T>,
  judge: (result: T) => Verdict,
  resend: boolean,
): Promise<Sent<T>> {
  const key = { network: network.name, route: connector.name, operation };
  // A fresh entry was recorded as sent; a resend under the same reference proves nothing by its own trouble (the
  // first send may still be processed), and the in-flight window counts again from it.
  if (resend) await markSent(core.sql, entry.id);
  let result: T;
  try {
    result = await send();
  } catch (error) {
    if (!routeError(error)) throw error;
    const fault = faultOf(error);
    await core.health.faulted(key, fault);
    if (neverSent(error) && !resend) {
      await markRefused(core.sql, entry.id, fault);
      return { routeFault: fault };
    }
    throw await inDoubt(core, connector, entry, fault, error);
  }
  const verdict = judge(result);
  if ('fault' in verdict) {
    await core.health.faulted(key, verdict.fault);
    if (resend) throw await inDoubt(core, connector, entry, verdict.fault);
    await markRefused(core.sql, entry.id, verdict.fault);
    return { routeFault: verdict.fault, result };
  }
  await core.health.succeeded(key);
  if ('refused' in verdict) {
    await markRefused(core.sql, entry.id, null);
    return { answer: result };
  }
  await markAccepted(core.sql, entry.id, verdict.accepted === true ? null : verdict.accepted);
  return { taken: result };
}

/** What the journal holds of an entry, as its connector is handed it on each call. */
export const recordedOf = (entry: JournalEntry): Recorded => ({
  operatorReference: entry.operatorReference,
  at: entry.created,
});

/** Marks an entry in doubt, with why, and returns the error that says so (the activity asks again later). */
export async function inDoubt(
  core: Core,
  connector: Connector,
  entry: JournalEntry,
  fault: string,
  cause?: unknown,
): Promise<OperationInDoubtError> {
  await markInDoubt(core.sql, entry.id, fault);
  const where = `${entry.kind} ${entry.reference} is in doubt on ${connector.name} (${fault}):`;
  const until = [
    "it stays there until the operator's status says what became of it,",
    `or says it holds nothing ${connector.inFlight.windowSeconds} s after the last send.`,
  ].join(' ');
  return new OperationInDoubtError(`${where} ${until}`, { cause });
}
