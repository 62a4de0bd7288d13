/**
 * The payment batch workflow's contract (`payment-batch-<id>`): id, input, query.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery } from '@temporalio/workflow';
import type { PaymentInput } from './money-out';
import type { OrganizationId, PaymentBatchId } from '../domain/ids';

export const paymentBatchWorkflowId = (batchId: PaymentBatchId): string => `payment-batch-${batchId}`;

/** Everything a batch's workflow needs; a run that continues as new carries where it is. */
export type PaymentBatchInput = {
  batchId: PaymentBatchId;
  organizationId: OrganizationId;
  /** Payments of the batch in flight at once. */
  concurrency: number;
  /** Rows whose payments one step creates (one transaction). */
  chunkSize: number;
  /** How each payment follows its payout (the payment workflow's settings). */
  payment: Pick<PaymentInput, 'statusPollSeconds' | 'statusTimeoutSeconds'>;
  /** History events after which the run continues as new (between chunks, nothing in flight). */
  historyLimit: number;
  /** The next chunk to create (0 at the start). */
  nextChunk?: number;
  /** Payments sent to the end by earlier runs. */
  finished?: number;
};

export type PaymentBatchProgress = { nextChunk: number; inFlight: number; finished: number; completed: boolean };

export const paymentBatchProgressQuery = defineQuery<PaymentBatchProgress>('progress');
