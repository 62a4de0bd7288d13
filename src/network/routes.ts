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
import type { Network } from '../domain/networks';
import {
  liveEntry,
  routeOfPayment,
  routesThatFaulted,
  type JournalEntry,
  type JournalKind,
} from '../services/networks/entries';
import { markAccepted, markRefused, recordEntry, settleRemoteTransactionId } from '../services/networks/journal';
import type { RouteOperation } from '../services/networks/route-health';
import type {
  Connector,
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  Recorded,
  TakenPrompt,
} from './adapter';
import { unavailable } from './route-faults';
import { evidenceOf, inDoubt, measured, recordedOf, sendOn, type Core, type Verdict } from './route-sends';

/** How many times an operation in doubt is sent under one entry before only its status is asked. */
const MAX_SENDS = 2;

type Routed = Omit<Core, 'byName'>;

export function createRoutedOperations(routed: Routed) {
  const core: Core = { ...routed, byName: new Map(routed.connectors.map((connector) => [connector.name, connector])) };
  return {
    requestPayment: (prompt: PaymentPrompt) => requestPayment(core, prompt),
    /** Asked on the route that took the prompt, whatever its health. */
    promptStatus: (prompt: TakenPrompt) => promptStatus(core, prompt),
    sendMoney: (payout: Payout) => sendMoney(core, payout),
    /**
     * Asked on the route that took the payout. One that route refused or failed for its own reasons
     * (our float there is empty) moved nothing: it is sent on the next route.
     */
    payoutStatus: (payout: Payout) => payoutStatus(core, payout),
  };
}

const routesOf = (core: Core, network: Network) =>
  core.connectors.filter((connector) => connector.routes.some((route) => route.network === network.name));

/** The connector of a journaled operation: its route, or (journaled before routes were) the network's first. */
const connectorOfEntry = (core: Core, network: Network, entry: JournalEntry | undefined) =>
  (entry?.route ? core.byName.get(entry.route) : undefined) ?? routesOf(core, network)[0]!;

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
async function route<T>(core: Core, op: Operation<T>): Promise<T> {
  const live = await liveEntry(core.sql, op.network.name, op.reference);
  if (live) {
    const connector = connectorOfEntry(core, op.network, live);
    // Taken there, or sent there with an outcome only its status can tell (no look-up by our id): its status decides.
    if (live.state === 'accepted' || !connector.lookup) return op.sentBefore(live);
    const evidence = await evidenceOf(
      core,
      connector as Connector & Required<Pick<Connector, 'lookup'>>,
      op.network,
      live,
    );
    if (evidence === 'wait' && !(connector.inFlight.resends && live.sends < MAX_SENDS))
      throw await inDoubt(core, connector, live, live.fault ?? 'its status query finds nothing yet');
    // Held there, and sent as often as it may be (or not resent at all by this operator): taken, its status decides.
    if (evidence === 'present' && !(connector.inFlight.resends && live.sends < MAX_SENDS)) {
      await markAccepted(core.sql, live.id);
      return op.sentBefore(live);
    }
    if (evidence !== 'absent') {
      // Held there (a resend is answered "already taken"), or in doubt on a route that deduplicates our reference.
      const send = () => op.send(connector, recordedOf(live));
      const sent = await sendOn(core, connector, op.network, live, op.operation, send, op.judge, true);
      if (!('routeFault' in sent)) return 'taken' in sent ? sent.taken : sent.answer;
    }
  }
  let lastFault: string | null = null;
  for (const connector of await candidatesFor(core, op)) {
    // The id the operator will know it by, where the connector chooses it, is recorded before the first send.
    const operatorReference =
      connector.operatorIdFor?.({ kind: op.kind, network: op.network, reference: op.reference }) ?? null;
    const entry = await recordEntry(core.sql, {
      ...op,
      network: op.network.name,
      route: connector.name,
      operatorReference,
    });
    // Another call recorded it first (a retry racing a slow attempt): it stays where that one sent it.
    if (!entry.inserted) return op.sentBefore(entry);
    const send = () => op.send(connector, recordedOf(entry));
    const sent = await sendOn(core, connector, op.network, entry, op.operation, send, op.judge, false);
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
async function candidatesFor<T>(core: Core, op: Operation<T>): Promise<Connector[]> {
  if (op.only) return [op.only];
  const faulted = new Set(await routesThatFaulted(core.sql, op.network.name, op.reference));
  const usable = await core.health.usable(
    op.network.name,
    op.operation,
    routesOf(core, op.network).map((connector) => connector.name),
  );
  return [
    ...usable.filter((each) => !faulted.has(each.route)),
    ...usable.filter((each) => faulted.has(each.route)),
  ].map((each) => core.byName.get(each.route)!);
}

const judgePayout = (result: PayoutResult): Verdict => {
  if (result.status === 'completed' || result.status === 'pending')
    return { accepted: result.remoteTransactionId ?? true };
  return result.routeFault ? { fault: result.error } : { refused: true as const };
};

/** A payment sent on the routes in turn; a reversal on `only`, the route its collection came by. */
function payoutOn(core: Core, payout: Payout, only?: Connector): Promise<PayoutResult> {
  return route<PayoutResult>(core, {
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

/**
 * A completed payout's transaction id: the first one learnt, where its route's answers may name others
 * (`firstTransactionIdStays`), so that every retry reports the same.
 */
async function firstTransactionId(core: Core, payout: Payout, result: PayoutResult): Promise<PayoutResult> {
  if (result.status !== 'completed') return result;
  const live = await liveEntry(core.sql, payout.network.name, payout.reference);
  if (!live || !connectorOfEntry(core, payout.network, live).firstTransactionIdStays) return result;
  return {
    ...result,
    remoteTransactionId: await settleRemoteTransactionId(core.sql, live.id, result.remoteTransactionId),
  };
}

/** A reversal's route: the one its collection came by, else the network's first. */
async function reversalConnector(core: Core, payout: Payout): Promise<Connector> {
  const name = payout.originalTransactionId
    ? await routeOfPayment(core.sql, payout.network.name, payout.originalTransactionId)
    : null;
  return (name ? core.byName.get(name) : undefined) ?? routesOf(core, payout.network)[0]!;
}

async function requestPayment(core: Core, prompt: PaymentPrompt): Promise<PromptResult> {
  const result = await route<PromptResult>(core, {
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
  const live = await liveEntry(core.sql, prompt.network.name, prompt.promptReference);
  if (!live || !connectorOfEntry(core, prompt.network, live).firstTransactionIdStays) return result;
  const remoteTransactionId = await settleRemoteTransactionId(core.sql, live.id, result.paid.remoteTransactionId);
  return { ...result, paid: { ...result.paid, remoteTransactionId } };
}

async function promptStatus(core: Core, prompt: TakenPrompt): Promise<PromptStatus> {
  const live = await liveEntry(core.sql, prompt.network.name, prompt.promptReference);
  const connector = connectorOfEntry(core, prompt.network, live);
  const asked = { ...prompt, recorded: live ? recordedOf(live) : undefined };
  const status = await measured(core, connector, prompt.network, 'collect', () => connector.promptStatus(asked));
  if (status.status !== 'paid' || !live || !connector.firstTransactionIdStays) return status;
  return {
    ...status,
    remoteTransactionId: await settleRemoteTransactionId(core.sql, live.id, status.remoteTransactionId),
  };
}

async function sendMoney(core: Core, payout: Payout): Promise<PayoutResult> {
  const only = payout.kind === 'reversal' ? await reversalConnector(core, payout) : undefined;
  return await firstTransactionId(core, payout, await payoutOn(core, payout, only));
}

async function payoutStatus(core: Core, payout: Payout): Promise<PayoutResult> {
  const live = await liveEntry(core.sql, payout.network.name, payout.reference);
  // A reversal is asked about where it was sent: back the way its collection came (one sent before reversals were
  // journaled has an entry that names no route).
  const connector =
    payout.kind === 'reversal' ? await reversalConnector(core, payout) : connectorOfEntry(core, payout.network, live);
  const asked = { ...payout, recorded: live ? recordedOf(live) : undefined };
  const result = await measured(core, connector, payout.network, 'payout', () => connector.payoutStatus(asked));
  if (
    payout.kind === 'reversal' ||
    !live ||
    (result.status !== 'rejected' && result.status !== 'failed') ||
    !result.routeFault
  )
    return await firstTransactionId(core, payout, result);
  await core.health.faulted({ network: payout.network.name, route: connector.name, operation: 'payout' }, result.error);
  await markRefused(core.sql, live.id, result.error);
  return await payoutOn(core, payout);
}
