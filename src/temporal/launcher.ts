/**
 * The one module that starts workflows (docs/architecture.md#layers): the API handlers, the activities and the
 * sweeps receive a launcher instead of starting workflows themselves. One start-once policy (ids
 * derive from database ids or the network's transaction id, a second start of an id is refused
 * and counts as done), one place for search attributes and memos, one post-commit start of what a
 * transaction recorded (`afterCommit`): a start that fails there loses nothing, the outbox sweep
 * starts it later.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  TypedSearchAttributes,
  WorkflowIdReusePolicy,
  type SearchAttributePair,
  type SignalDefinition,
} from '@temporalio/common';
import type { Config } from '../config';
import type { CollectionRequestRow } from '../domain/collection-requests';
import { networkByName } from '../domain/networks';
import type { Committed, Launcher } from '../services/platform/ports';
import {
  OUTBOX,
  type OutboxKind,
  type OutboxRow,
  type PaymentBatchToStart,
  type PaymentToStart,
  type ReversalToStart,
} from '../services/platform/outbox';
import { subscriptionInputFor } from '../services/collections/subscriptions';
import { workflowInputFor } from '../services/collections/request-status';
import { paymentCancelledSignal, paymentWorkflowId, reversalWorkflowId } from '../contracts/money-out';
import { incomingCollectionWorkflowId, type IncomingPaymentInput } from '../contracts/incoming-collection';
import { paymentBatchWorkflowId, type PaymentBatchInput } from '../contracts/payment-batch';
import { subscriptionWorkflowId } from '../contracts/subscription';
import {
  collectionMatchedSignal,
  collectionRequestWorkflowId,
  type CollectionMatch,
} from '../contracts/collection-request';
import { networkHintSignal, type NetworkHint } from '../contracts/common';
import { searchAttributes } from '../contracts/search-attributes';
import { webhookSenderTaskQueue } from '../contracts/webhook-dispatcher';
import { webhookDispatcherId } from '../contracts/webhook-dispatcher';
import type { CollectionRequestId, PaymentId } from '../domain/ids';
import type { StartableWorkflow, StartableWorkflows } from '../workflows/registry';

type LauncherSettings = {
  taskQueue: string;
  /** How a payout the network has not confirmed is followed (payments, reversals). */
  payoutStatusPollSeconds: number;
  payoutStatusTimeoutSeconds: number;
  /** Payments of one batch in flight at once. */
  paymentBatchConcurrency: number;
  /** Wait before re-prompting after a refused prompt when a request has no retry interval. */
  failedPromptRetrySeconds: number;
  /** How long a merchant's verification URL has to answer (docs/api.md#collections). */
  verificationTimeoutSeconds: number;
  /** Dispatchers of the webhook delivery pool. */
  webhookDispatchers: number;
  /** How often a real operator is asked about what it has not called back about. */
  networkStatusPollSeconds: number;
};

/** How long a payment reported by callback may wait for its operator's confirmation before it counts as unconfirmed. */
const REPORT_CONFIRMATION_SECONDS = 24 * 3600;

type LaunchLogger = (message: string, fields: Record<string, unknown>) => void;

type StartOptions<W extends StartableWorkflow> = {
  workflowId: string;
  args: Parameters<StartableWorkflows[W]>;
  searchAttributes: SearchAttributePair[];
  memo?: Record<string, unknown>;
};

/** Signals a workflow; one that does not exist (ended, or never started) is no error: false. */
async function signalIfRunning<Args extends unknown[]>(
  client: Client,
  workflowId: string,
  signal: SignalDefinition<Args>,
  ...args: Args
): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).signal(signal, ...args);
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** Rows of a batch whose payments one step creates, in one transaction. */
const PAYMENT_BATCH_CHUNK_ROWS = 100;
/** History events after which a batch's run continues as new (a child payment costs about five in its parent). */
const PAYMENT_BATCH_HISTORY_EVENTS = 10_000;

/** A start of one row as a start of several, each on its own. */
const each =
  <T>(start: (row: T) => Promise<boolean>) =>
  async (rows: readonly T[]): Promise<boolean> =>
    (await Promise.all(rows.map(start))).some(Boolean);

function createLauncher(client: Client, settings: LauncherSettings, log: LaunchLogger): Launcher {
  const { taskQueue } = settings;

  /** Starts `workflowType` once: true when this call started it, false when it already existed (open or closed). */
  async function startOnce<W extends StartableWorkflow>(workflowType: W, options: StartOptions<W>): Promise<boolean> {
    try {
      await client.workflow.start<StartableWorkflows[W]>(workflowType, {
        taskQueue,
        workflowId: options.workflowId,
        // Never a second run for one id, even after the first has closed.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        args: options.args,
        typedSearchAttributes: new TypedSearchAttributes(options.searchAttributes),
        ...(options.memo ? { memo: options.memo } : {}),
      });
      return true;
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
      throw error;
    }
  }

  const keyword = (
    key: (typeof searchAttributes)[keyof typeof searchAttributes],
    value: string | number,
  ): SearchAttributePair => ({ key, value: String(value) });

  const launcher: Launcher = {
    /** A saved request's workflow, and its subscription's when it has one. */
    async startCollectionRequest(request: CollectionRequestRow): Promise<boolean> {
      const network = networkByName(request.network);
      const input = workflowInputFor(request, {
        failedPromptRetrySeconds: settings.failedPromptRetrySeconds,
        networkPullsFunds: network?.pullsFunds ?? false,
        networkPollSeconds: settings.networkStatusPollSeconds,
        verificationTimeoutSeconds: settings.verificationTimeoutSeconds,
      });
      const subscription = subscriptionInputFor(request);
      const started = await startOnce('collectionRequest', {
        workflowId: collectionRequestWorkflowId(request.id),
        args: [input],
        searchAttributes: [
          keyword(searchAttributes.organizationId, request.organizationId),
          keyword(searchAttributes.requestStatus, request.status),
          keyword(searchAttributes.phoneNumber, request.phoneNumber),
          keyword(searchAttributes.currency, request.currency),
        ],
        memo: { organizationId: request.organizationId, amount: request.amount, currency: request.currency },
      });
      if (subscription !== null) {
        await startOnce('subscription', {
          workflowId: subscriptionWorkflowId(request.id),
          args: [subscription],
          searchAttributes: [
            keyword(searchAttributes.organizationId, request.organizationId),
            keyword(searchAttributes.phoneNumber, request.phoneNumber),
            keyword(searchAttributes.currency, request.currency),
          ],
        });
      }
      return started;
    },

    /**
     * The network entry point: every reported payment becomes one `collection-<network>-<remote
     * id>` workflow; a repeated report of a transaction starts nothing new.
     */
    async startIncomingCollection(
      payment: IncomingPaymentInput,
      options: { confirm?: boolean } = {},
    ): Promise<{ workflowId: string; duplicate: boolean }> {
      const workflowId = incomingCollectionWorkflowId(payment.network, payment.remoteTransactionId);
      // `confirm`: a callback reported it, and the operator's status query must confirm it first.
      const confirm = options.confirm
        ? { confirm: { pollSeconds: settings.networkStatusPollSeconds, timeoutSeconds: REPORT_CONFIRMATION_SECONDS } }
        : {};
      const started = await startOnce('incomingCollection', {
        workflowId,
        args: [{ payment, verificationTimeoutSeconds: settings.verificationTimeoutSeconds, ...confirm }],
        searchAttributes: [
          keyword(searchAttributes.phoneNumber, payment.phoneNumber),
          keyword(searchAttributes.currency, payment.currency),
        ],
        memo: { network: payment.network, remoteTransactionId: payment.remoteTransactionId, amount: payment.amount },
      });
      return { workflowId, duplicate: !started };
    },

    /**
     * The dispatchers of the webhook delivery pool (`webhook-dispatcher-<slot>`), started where one
     * is not running: at the worker's start, and by every outbox sweep, so a dispatcher stopped from
     * outside runs again. How many this call started.
     */
    async ensureWebhookDispatchers(): Promise<number> {
      let started = 0;
      for (let slot = 0; slot < settings.webhookDispatchers; slot += 1) {
        try {
          await client.workflow.start<StartableWorkflows['webhookDispatcher']>(
            'webhookDispatcher' satisfies StartableWorkflow,
            {
              taskQueue,
              workflowId: webhookDispatcherId(taskQueue, slot),
              // A dispatcher that ended (terminated from outside) is started again; a running one is left alone.
              workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
              args: [{ slot, senderTaskQueue: webhookSenderTaskQueue(taskQueue) }],
            },
          );
          started += 1;
        } catch (error) {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        }
      }
      return started;
    },

    /** A payment's workflow (`payment-<id>`): waits for its start date, sends it, follows it to its end. */
    async startPayment(payment: PaymentToStart): Promise<boolean> {
      return await startOnce('payment', {
        workflowId: paymentWorkflowId(payment.id),
        args: [
          {
            paymentId: payment.id,
            organizationId: payment.organizationId,
            startAt: payment.startDate?.toISOString() ?? null,
            statusPollSeconds: settings.payoutStatusPollSeconds,
            statusTimeoutSeconds: settings.payoutStatusTimeoutSeconds,
          },
        ],
        searchAttributes: [keyword(searchAttributes.organizationId, payment.organizationId)],
        memo: { organizationId: payment.organizationId, paymentId: payment.id },
      });
    },

    /** A reversal's workflow (`reversal-<id>`): sends the collection back and follows it to its end. */
    async startReversal(reversal: ReversalToStart): Promise<boolean> {
      return await startOnce('reversal', {
        workflowId: reversalWorkflowId(reversal.id),
        args: [
          {
            reversalId: reversal.id,
            organizationId: reversal.organizationId,
            statusPollSeconds: settings.payoutStatusPollSeconds,
            statusTimeoutSeconds: settings.payoutStatusTimeoutSeconds,
          },
        ],
        searchAttributes: [keyword(searchAttributes.organizationId, reversal.organizationId)],
        memo: { organizationId: reversal.organizationId, reversalId: reversal.id },
      });
    },

    /**
     * A batch's workflow (`payment-batch-<id>`): creates its payments a chunk at a time and sends them, a bounded
     * number at once.
     */
    async startPaymentBatch(batch: PaymentBatchToStart): Promise<boolean> {
      const input: PaymentBatchInput = {
        batchId: batch.id,
        organizationId: batch.organizationId,
        concurrency: settings.paymentBatchConcurrency,
        chunkSize: PAYMENT_BATCH_CHUNK_ROWS,
        payment: {
          statusPollSeconds: settings.payoutStatusPollSeconds,
          statusTimeoutSeconds: settings.payoutStatusTimeoutSeconds,
        },
        historyLimit: PAYMENT_BATCH_HISTORY_EVENTS,
      };
      return await startOnce('paymentBatch', {
        workflowId: paymentBatchWorkflowId(batch.id),
        args: [input],
        searchAttributes: [keyword(searchAttributes.organizationId, batch.organizationId)],
        memo: { organizationId: batch.organizationId, paymentBatchId: batch.id },
      });
    },

    /**
     * Wakes a cancelled payment's workflow (waiting for its start date) so it ends now; the row already says cancelled.
     */
    async signalPaymentCancelled(paymentId: PaymentId): Promise<void> {
      await signalIfRunning(client, paymentWorkflowId(paymentId), paymentCancelledSignal);
    },

    /**
     * Cancels a subscription's workflow: its wait for the next occurrence ends and the workflow with
     * it. The row already says it is cancelled (the occurrence activity reads that), so a workflow
     * that ended, never started or cannot be reached now creates nothing more either way.
     */
    async cancelSubscription(requestId: CollectionRequestId): Promise<void> {
      try {
        await client.workflow.getHandle(subscriptionWorkflowId(requestId)).cancel();
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return;
        log('subscription workflow not cancelled; it creates no further occurrence', {
          requestId,
          error: String(error),
        });
      }
    },

    /**
     * Tells a request's workflow that a collection paid it. Repeating it is harmless (the workflow
     * keeps the first); a workflow that already ended (it expired meanwhile) is not an error.
     */
    async signalCollectionMatched(requestId: CollectionRequestId, match: CollectionMatch): Promise<boolean> {
      return await signalIfRunning(client, collectionRequestWorkflowId(requestId), collectionMatchedSignal, match);
    },

    /**
     * Wakes the workflow that waits on an operator's answer (its callback: a hint, never proof). A
     * workflow that already ended is not an error: the callback came late.
     */
    async signalNetworkHint(workflowId: string, hint: NetworkHint): Promise<boolean> {
      return await signalIfRunning(client, workflowId, networkHintSignal, hint);
    },

    /**
     * After a commit: starts the workflows of what the transaction recorded, side by side. Never
     * throws: a failed start is logged and left to the outbox sweep, the commit stands.
     */
    async afterCommit(committed: Committed): Promise<void> {
      await Promise.all(
        (Object.keys(OUTBOX) as OutboxKind[]).flatMap((kind) =>
          (committed[kind] ?? [])
            .map((row) => [row])
            .map((group) =>
              launcher.startOutboxRows(kind, group).catch((error: unknown) =>
                log(`${OUTBOX[kind].noun} start deferred to the outbox sweep`, {
                  kind,
                  ids: group.map((row) => row.id),
                  error,
                }),
              ),
            ),
        ),
      );
    },

    /**
     * Hands outbox rows of `kind` to their workflow (the post-commit start and the outbox sweep both
     * come here): started, or signalled for an actor. True when any of them is new to Temporal.
     */
    startOutboxRows<K extends OutboxKind>(kind: K, group: readonly OutboxRow<K>[]): Promise<boolean> {
      return (outboxStarts[kind] as (rows: readonly OutboxRow<K>[]) => Promise<boolean>)(group);
    },
  };

  /**
   * How the workflow of each outbox kind starts: one entry per kind of services/platform/outbox.ts (the type demands
   * each).
   */
  const outboxStarts: { [K in OutboxKind]: (rows: readonly OutboxRow<K>[]) => Promise<boolean> } = {
    requests: each(launcher.startCollectionRequest),
    payments: each(launcher.startPayment),
    reversals: each(launcher.startReversal),
    paymentBatches: each(launcher.startPaymentBatch),
  };
  return launcher;
}

/** The launcher of a process, its settings from configuration. */
export function launcherFromConfig(client: Client, config: Config, log: LaunchLogger): Launcher {
  return createLauncher(
    client,
    {
      taskQueue: config.temporal.taskQueue,
      payoutStatusPollSeconds: config.payouts.statusPollSeconds,
      payoutStatusTimeoutSeconds: config.payouts.statusTimeoutSeconds,
      paymentBatchConcurrency: config.payouts.batchConcurrency,
      failedPromptRetrySeconds: config.collectionRequests.failedPromptRetrySeconds,
      verificationTimeoutSeconds: config.collections.verificationTimeoutSeconds,
      webhookDispatchers: config.webhooks.dispatchers,
      networkStatusPollSeconds: config.networkStatusPollSeconds,
    },
    log,
  );
}
