/**
 * The workflow types the worker registers (src/workflows/index.ts), in two kinds. The types the
 * launcher and the Schedules start, by the name the worker registers each under, with its
 * function's type: a start names one of these, and the compiler checks its arguments against that
 * workflow's parameters. Every other registered type is an earlier one, kept only for executions in
 * flight, and has its retirement rule here (the compiler asks for one per type, and for none more).
 * No workflow code is loaded: the one import is type-only, so clients import this safely.
 */
import type * as registered from './index';
import type { MovementWorkflow } from '../domain/money-movements';

/** The startable types; the money movements' (`payment`, `reversal`, `paymentBatch`) come from src/domain/money-movements.ts. */
export type StartableWorkflow =
  | 'collectionRequestV3' | 'subscription' | 'incomingCollectionV3' | MovementWorkflow
  | 'webhookDispatcher' | 'outboxSweepV3' | 'eventRetention';

/** Each startable type's function; a name missing from the worker's registry does not compile. */
export type StartableWorkflows = Pick<typeof registered, StartableWorkflow>;

/** The workflow functions the worker registers (its exports that are functions; query definitions are not). */
type RegisteredWorkflow = { [K in keyof typeof registered]: (typeof registered)[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof typeof registered];

/** The earlier types: registered for executions in flight, started by nothing. */
export type LegacyWorkflow = Exclude<RegisteredWorkflow, StartableWorkflow>;

/**
 * When an earlier type may go (docs/architecture.md#retiring-a-workflow-shape): no execution of it
 * is open in the namespace, and none of the earlier types that can still start it or continue as new
 * into it (`reachedFrom`). Nothing current can: the launcher and the Schedules name only
 * `StartableWorkflow`, and no current workflow starts a child of an earlier type or continues as new
 * into one.
 */
type Retirement = {
  /** What does its work now. */
  replacedBy: string;
  /** When an execution still open ends ("open executions end ..."). */
  openUntil: string;
  /** The earlier types that can still start it or continue as new into it. */
  reachedFrom: readonly LegacyWorkflow[];
};

export const LEGACY_WORKFLOWS: Record<LegacyWorkflow, Retirement> = {
  collectionRequest: {
    replacedBy: 'collectionRequestV3',
    openUntil: 'at the request\'s expiry (24 hours by default; a request may name a later one)',
    reachedFrom: [],
  },
  incomingCollection: {
    replacedBy: 'incomingCollectionV3',
    openUntil: 'after the verification time, or the 24-hour confirmation window of a callback report',
    reachedFrom: [],
  },
  webhookV2: {
    replacedBy: 'webhookDispatcher (a fixed pool sends every webhook\'s deliveries from the rows; deletion, disabling and a 410 cancel in their own statements)',
    openUntil: 'at its next turn, when it hands its webhook over to the pool and ends; the worker wakes every open one at its start (handOverWebhookActors)',
    reachedFrom: ['webhook'],
  },
  webhook: {
    replacedBy: 'webhookV2',
    openUntil: 'at its next turn (a delivery or a wake-up signals it), continuing as new as webhookV2; an idle one waits for that turn',
    reachedFrom: [],
  },
  webhookDelivery: {
    replacedBy: 'webhookDispatcher (the delivery rows are its queue)',
    openUntil: 'after its last retry, about 16 hours after its start with the default schedule',
    reachedFrom: ['eventDispatch'],
  },
  eventDispatch: {
    replacedBy: 'the delivery rows recorded with each event (migration 008; migration 024 handed over the events left undispatched)',
    openUntil: 'within minutes, once it has started its event\'s deliveries and marked the event dispatched',
    reachedFrom: [],
  },
  outboxSweepV2: {
    replacedBy: 'outboxSweepV3 (the worker moves the Schedule to it)',
    openUntil: 'within the 10-minute execution timeout of the Schedule\'s runs',
    reachedFrom: [],
  },
};
