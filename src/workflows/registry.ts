/**
 * The workflow types the worker registers (src/workflows/index.ts), by the name each is registered
 * under, with its function's type: a start names one of these, and the compiler checks its arguments
 * against that workflow's parameters. No workflow code is loaded: the one import is type-only, so
 * clients import this safely.
 */
import type * as registered from './index';
import type { MovementWorkflow } from '../domain/money-movements';

/**
 * The startable types; the money movements' (`payment`, `reversal`, `paymentBatch`) come from
 * src/domain/money-movements.ts.
 */
export type StartableWorkflow =
  | 'collectionRequest'
  | 'subscription'
  | 'incomingCollection'
  | MovementWorkflow
  | 'webhookDispatcher'
  | 'outboxSweep'
  | 'eventRetention';

/** The workflow functions the worker registers (its exports that are functions; query definitions are not). */
type RegisteredWorkflow = {
  [K in keyof typeof registered]: (typeof registered)[K] extends (...args: never[]) => Promise<unknown> ? K : never;
}[keyof typeof registered];

/**
 * Each startable type's function; a name missing from the worker's registry does not compile, and
 * neither does any start while the worker registers a type that nothing starts (this is `never`).
 */
export type StartableWorkflows = [RegisteredWorkflow] extends [StartableWorkflow]
  ? Pick<typeof registered, StartableWorkflow>
  : never;
