/**
 * Money on a network with several routes (a direct connector, then pawaPay): each operation is
 * journaled before it is sent (src/services/networks/journal.ts) and sent on the first route the
 * routes' health allows (src/services/networks/route-health.ts). It moves to the next route only when the
 * journal knows nothing happened on the first: the route refused it for its own reasons (system busy,
 * network down, our float empty), its connection was refused before anything was sent, or, after an
 * answer that says nothing (a timeout, a 5xx), its own status query says it holds no such operation
 * once the route's in-flight window has passed since the last send. Until then it is in doubt, and in
 * doubt is not refused: it stays on its route. Whatever a route took stays there: its status is asked
 * there until it ends, whatever that route's health.
 * docs/going-live.md#routes-health-and-failover, docs/going-live.md#in-doubt-is-not-refused
 */
import type { Sql } from '../db';
import type { Network } from '../domain/networks';
import {
  entryById,
  liveEntry,
  routeOfPayment,
  routesThatFaulted,
  type JournalEntry,
  type JournalKind,
} from '../services/networks/entries';
import {
  markAccepted,
  markInDoubt,
  markRefused,
  markSent,
  recordEntry,
  settleRemoteTransactionId,
} from '../services/networks/journal';
import type { RouteHealth, RouteOperation } from '../services/networks/route-health';
import {
  OperationInDoubtError,
  type Connector,
  type PaymentPrompt,
  type Payout,
  type PayoutResult,
  type PromptResult,
  type Recorded,
  type PromptStatus,
  type TakenPrompt,
} from './adapter';
import { neverSent } from './operator-http';
import { faultOf, routeError, unavailable } from './route-faults';

/** How many times an operation in doubt is sent under one entry before only its status is asked. */
const MAX_SENDS = 2;

/**
 * What came of sending on one route: taken there, refused for the route's reasons (try the next), or an answer to
 * return as it is.
 */
type Sent<T> = { taken: T } | { routeFault: string; result?: T } | { answer: T };

type Routed = { sql: Sql; health: RouteHealth; connectors: readonly Connector[] };

/**
 * A route's answer as the journal reads it: taken (with the operator's reference when it gave one), its own fault, or
 * the subscriber's refusal.
 */
type Verdict = { accepted: string | null | true } | { fault: string } | { refused: true };

export function createRoutedOperations({ sql, health, connectors }: Routed) {
  const byName = new Map(connectors.map((connector) => [connector.name, connector]));
  const routesOf = (network: Network) =>
    connectors.filter((connector) => connector.routes.some((route) => route.network === network.name));

  /** The connector of a journaled operation: its route, or (journaled before routes were) the network's first. */
  const connectorOfEntry = (network: Network, entry: JournalEntry | undefined) =>
    (entry?.route ? byName.get(entry.route) : undefined) ?? routesOf(network)[0]!;

  /** Runs one call on a route, counting its outcome for the route's health: a thrown error is a route fault. */
  async function measured<T>(
    connector: Connector,
    network: Network,
    operation: RouteOperation,
    call: () => Promise<T>,
  ): Promise<T> {
    const key = { network: network.name, route: connector.name, operation };
    try {
      const result = await call();
      await health.succeeded(key);
      return result;
    } catch (error) {
      if (routeError(error)) await health.faulted(key, faultOf(error));
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
  async function evidenceOf(
    connector: Connector & Required<Pick<Connector, 'lookup'>>,
    network: Network,
    entry: JournalEntry,
  ): Promise<'present' | 'absent' | 'wait'> {
    const current = (await entryById(sql, entry.id)) ?? entry;
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
    await markRefused(sql, current.id, current.state === 'in_doubt' ? (current.fault ?? 'no answer') : null);
    return 'absent';
  }

  /**
   * Sends on one route, journaled: recorded first; then accepted, refused, or in doubt (no answer, a
   * 5xx, or a resend's own trouble: the first send may still be processed). In doubt throws: the
   * activity asks again, and the operation stays on this route until its evidence settles it.
   */
  async function sendOn<T>(
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
    if (resend) await markSent(sql, entry.id);
    let result: T;
    try {
      result = await send();
    } catch (error) {
      if (!routeError(error)) throw error;
      const fault = faultOf(error);
      await health.faulted(key, fault);
      if (neverSent(error) && !resend) {
        await markRefused(sql, entry.id, fault);
        return { routeFault: fault };
      }
      throw await inDoubt(connector, entry, fault, error);
    }
    const verdict = judge(result);
    if ('fault' in verdict) {
      await health.faulted(key, verdict.fault);
      if (resend) throw await inDoubt(connector, entry, verdict.fault);
      await markRefused(sql, entry.id, verdict.fault);
      return { routeFault: verdict.fault, result };
    }
    await health.succeeded(key);
    if ('refused' in verdict) {
      await markRefused(sql, entry.id, null);
      return { answer: result };
    }
    await markAccepted(sql, entry.id, verdict.accepted === true ? null : verdict.accepted);
    return { taken: result };
  }

  /** What the journal holds of an entry, as its connector is handed it on each call. */
  const recordedOf = (entry: JournalEntry): Recorded => ({
    operatorReference: entry.operatorReference,
    at: entry.created,
  });

  /** Marks an entry in doubt, with why, and returns the error that says so (the activity asks again later). */
  async function inDoubt(
    connector: Connector,
    entry: JournalEntry,
    fault: string,
    cause?: unknown,
  ): Promise<OperationInDoubtError> {
    await markInDoubt(sql, entry.id, fault);
    const where = `${entry.kind} ${entry.reference} is in doubt on ${connector.name} (${fault}):`;
    const until = [
      "it stays there until the operator's status says what became of it,",
      `or says it holds nothing ${connector.inFlight.windowSeconds} s after the last send.`,
    ].join(' ');
    return new OperationInDoubtError(`${where} ${until}`, { cause });
  }

  type Operation<T> = {
    network: Network;
    kind: JournalKind;
    operation: RouteOperation;
    reference: string;
    workflowId: string;
    phoneNumber: string;
    amount: string;
    send: (connector: Connector, recorded: Recorded) => Promise<T>;
    /** The one route it may take, whatever the routes' health (a reversal's: back the way its collection came). */
    only?: Connector;
    judge: (result: T) => Verdict;
    unavailable: (error: string) => T;
    /** What a call sent before under this reference answers now: taken, its status to tell. */
    sentBefore: (entry: JournalEntry) => T;
  };

  /**
   * An operation that may move money, on the routes in turn. A live journal entry keeps it on its
   * route (asked again there: the connectors are idempotent per our reference), unless that route's
   * status query says it never got it. Routes that refused this reference for their own reasons are
   * tried after the others.
   */
  async function route<T>(op: Operation<T>): Promise<T> {
    const live = await liveEntry(sql, op.network.name, op.reference);
    if (live) {
      const connector = connectorOfEntry(op.network, live);
      // Taken there, or sent there with an outcome only its status can tell (no look-up by our id): its status decides.
      if (live.state === 'accepted' || !connector.lookup) return op.sentBefore(live);
      const evidence = await evidenceOf(connector as Connector & Required<Pick<Connector, 'lookup'>>, op.network, live);
      if (evidence === 'wait' && !(connector.inFlight.resends && live.sends < MAX_SENDS))
        throw await inDoubt(connector, live, live.fault ?? 'its status query finds nothing yet');
      // Held there, and sent as often as it may be (or not resent at all by this operator): taken, its status decides.
      if (evidence === 'present' && !(connector.inFlight.resends && live.sends < MAX_SENDS)) {
        await markAccepted(sql, live.id);
        return op.sentBefore(live);
      }
      if (evidence !== 'absent') {
        // Held there (a resend is answered "already taken"), or in doubt on a route that deduplicates our reference.
        const send = () => op.send(connector, recordedOf(live));
        const sent = await sendOn(connector, op.network, live, op.operation, send, op.judge, true);
        if (!('routeFault' in sent)) return 'taken' in sent ? sent.taken : sent.answer;
      }
    }
    let lastFault: string | null = null;
    for (const connector of await candidatesFor(op)) {
      // The id the operator will know it by, where the connector chooses it, is recorded before the first send.
      const operatorReference =
        connector.operatorIdFor?.({ kind: op.kind, network: op.network, reference: op.reference }) ?? null;
      const entry = await recordEntry(sql, {
        ...op,
        network: op.network.name,
        route: connector.name,
        operatorReference,
      });
      // Another call recorded it first (a retry racing a slow attempt): it stays where that one sent it.
      if (!entry.inserted) return op.sentBefore(entry);
      const send = () => op.send(connector, recordedOf(entry));
      const sent = await sendOn(connector, op.network, entry, op.operation, send, op.judge, false);
      if ('taken' in sent) return sent.taken;
      if ('answer' in sent) return sent.answer;
      // Its one route refused it for its own reasons: that answer is the operation's. Its connection refused: nothing
      // was sent, and the activity asks again.
      if (op.only) {
        if (sent.result !== undefined) return sent.result;
        throw new Error(`${op.kind} ${op.reference} not sent on ${connector.name}: ${sent.routeFault}`);
      }
      lastFault = sent.routeFault;
    }
    return op.unavailable(unavailable(op.network, lastFault));
  }

  /**
   * The routes an operation may be sent on, in turn: its one route, or those the routes' health allows, the routes
   * that refused this reference for their own reasons last (another route first, and each once per call).
   */
  async function candidatesFor<T>(op: Operation<T>): Promise<Connector[]> {
    if (op.only) return [op.only];
    const faulted = new Set(await routesThatFaulted(sql, op.network.name, op.reference));
    const usable = await health.usable(
      op.network.name,
      op.operation,
      routesOf(op.network).map((connector) => connector.name),
    );
    return [
      ...usable.filter((each) => !faulted.has(each.route)),
      ...usable.filter((each) => faulted.has(each.route)),
    ].map((each) => byName.get(each.route)!);
  }

  const judgePayout = (result: PayoutResult): Verdict => {
    if (result.status === 'completed' || result.status === 'pending')
      return { accepted: result.remoteTransactionId ?? true };
    return result.routeFault ? { fault: result.error } : { refused: true as const };
  };

  /** A payment sent on the routes in turn; a reversal on `only`, the route its collection came by. */
  function payoutOn(payout: Payout, only?: Connector): Promise<PayoutResult> {
    return route<PayoutResult>({
      network: payout.network,
      kind: payout.kind === 'reversal' ? 'reversal' : 'payout',
      only,
      operation: 'payout',
      reference: payout.reference,
      workflowId: payout.workflowId,
      phoneNumber: payout.phoneNumber,
      amount: payout.amount,
      send: (connector, recorded) => connector.sendMoney({ ...payout, recorded }),
      judge: judgePayout,
      unavailable: (error) => ({ status: 'rejected', error, remoteTransactionId: null, routeFault: true }),
      sentBefore: () => ({ status: 'pending', remoteTransactionId: null }),
    });
  }

  return {
    async requestPayment(prompt: PaymentPrompt): Promise<PromptResult> {
      const result = await route<PromptResult>({
        network: prompt.network,
        kind: 'prompt',
        operation: 'collect',
        reference: prompt.promptReference,
        workflowId: prompt.workflowId,
        phoneNumber: prompt.phoneNumber,
        amount: prompt.amount,
        send: (connector, recorded) => connector.requestPayment({ ...prompt, recorded }),
        judge: (result): Verdict => {
          if (result.accepted)
            return { accepted: result.confirm?.operatorReference ?? result.paid?.remoteTransactionId ?? true };
          return result.routeFault ? { fault: result.error } : { refused: true };
        },
        unavailable: (error) => ({ accepted: false, error, routeFault: true }),
        sentBefore: (entry) => ({
          accepted: true,
          confirm: { operatorReference: entry.operatorReference ?? entry.reference },
        }),
      });
      // Paid at once (the operator charged as it answered): the first transaction id learnt stays, where it must.
      if (!result.accepted || !result.paid) return result;
      const live = await liveEntry(sql, prompt.network.name, prompt.promptReference);
      if (!live || !connectorOfEntry(prompt.network, live).firstTransactionIdStays) return result;
      const remoteTransactionId = await settleRemoteTransactionId(sql, live.id, result.paid.remoteTransactionId);
      return { ...result, paid: { ...result.paid, remoteTransactionId } };
    },

    /** Asked on the route that took the prompt, whatever its health. */
    async promptStatus(prompt: TakenPrompt): Promise<PromptStatus> {
      const live = await liveEntry(sql, prompt.network.name, prompt.promptReference);
      const connector = connectorOfEntry(prompt.network, live);
      const asked = { ...prompt, recorded: live ? recordedOf(live) : undefined };
      const status = await measured(connector, prompt.network, 'collect', () => connector.promptStatus(asked));
      if (status.status !== 'paid' || !live || !connector.firstTransactionIdStays) return status;
      return {
        ...status,
        remoteTransactionId: await settleRemoteTransactionId(sql, live.id, status.remoteTransactionId),
      };
    },

    async sendMoney(payout: Payout): Promise<PayoutResult> {
      const only = payout.kind === 'reversal' ? await reversalConnector(payout) : undefined;
      return await firstTransactionId(payout, await payoutOn(payout, only));
    },

    /**
     * Asked on the route that took the payout. One that route refused or failed for its own reasons
     * (our float there is empty) moved nothing: it is sent on the next route.
     */
    async payoutStatus(payout: Payout): Promise<PayoutResult> {
      const live = await liveEntry(sql, payout.network.name, payout.reference);
      // A reversal is asked about where it was sent: back the way its collection came (one sent before reversals were
      // journaled has an entry that names no route).
      const connector =
        payout.kind === 'reversal' ? await reversalConnector(payout) : connectorOfEntry(payout.network, live);
      const asked = { ...payout, recorded: live ? recordedOf(live) : undefined };
      const result = await measured(connector, payout.network, 'payout', () => connector.payoutStatus(asked));
      if (
        payout.kind === 'reversal' ||
        !live ||
        (result.status !== 'rejected' && result.status !== 'failed') ||
        !result.routeFault
      )
        return await firstTransactionId(payout, result);
      await health.faulted({ network: payout.network.name, route: connector.name, operation: 'payout' }, result.error);
      await markRefused(sql, live.id, result.error);
      return await payoutOn(payout);
    },
  };

  /**
   * A completed payout's transaction id: the first one learnt, where its route's answers may name others
   * (`firstTransactionIdStays`), so that every retry reports the same.
   */
  async function firstTransactionId(payout: Payout, result: PayoutResult): Promise<PayoutResult> {
    if (result.status !== 'completed') return result;
    const live = await liveEntry(sql, payout.network.name, payout.reference);
    if (!live || !connectorOfEntry(payout.network, live).firstTransactionIdStays) return result;
    return {
      ...result,
      remoteTransactionId: await settleRemoteTransactionId(sql, live.id, result.remoteTransactionId),
    };
  }

  /** A reversal's route: the one its collection came by, else the network's first. */
  async function reversalConnector(payout: Payout): Promise<Connector> {
    const name = payout.originalTransactionId
      ? await routeOfPayment(sql, payout.network.name, payout.originalTransactionId)
      : null;
    return (name ? byName.get(name) : undefined) ?? routesOf(payout.network)[0]!;
  }
}
