/**
 * The workflow types the launcher and the Schedules start, by the name the worker registers each
 * under (src/workflows/index.ts), with its function's type: a start names one of these, and the
 * compiler checks its arguments against that workflow's parameters. Type-only: safe to import from
 * clients (no workflow code is loaded).
 */
import type * as registered from './index';

export type StartableWorkflow =
  | 'collectionRequestV3' | 'subscription' | 'incomingCollectionV3' | 'payment' | 'reversal' | 'paymentBatch'
  | 'eventDispatch' | 'webhookV2' | 'outboxSweepV2' | 'eventRetention';

/** Each startable type's function; a name missing from the worker's registry does not compile. */
export type StartableWorkflows = Pick<typeof registered, StartableWorkflow>;
