import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes, WorkflowIdReusePolicy } from '@temporalio/common';
import type { Sql } from '../db';
import type { CollectionRequestRow } from '../domain/collection-requests';
import { networkByName } from '../domain/networks';
import { subscriptionInputFor, workflowInputFor, type CreatedRequest } from '../services/collection-requests';
import { createEventDispatcher } from './events';
import type { collectionRequest } from '../workflows/collection-request';
import type { subscription } from '../workflows/subscription';
import {
  collectionRequestWorkflowId, searchAttributes, subscriptionWorkflowId, type CollectionRequestInput, type SubscriptionInput,
} from '../workflows/shared';

async function startOnce(start: () => Promise<unknown>): Promise<boolean> {
  try {
    await start();
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

function requestSearchAttributes(request: CollectionRequestRow) {
  return new TypedSearchAttributes([
    { key: searchAttributes.organizationId, value: String(request.organizationId) },
    { key: searchAttributes.requestStatus, value: request.status },
    { key: searchAttributes.phoneNumber, value: request.phoneNumber },
    { key: searchAttributes.currency, value: request.currency },
  ]);
}

/**
 * Starts a request's workflow (and its subscription's), once: ids derive from the request id and
 * a second start is refused, so the API and the outbox sweep may race safely.
 */
export async function startRequestWorkflows(
  client: Client,
  taskQueue: string,
  request: CollectionRequestRow,
  input: CollectionRequestInput,
  subscriptionInput: SubscriptionInput | null,
): Promise<void> {
  await startOnce(() =>
    client.workflow.start<typeof collectionRequest>('collectionRequest', {
      workflowId: collectionRequestWorkflowId(request.id),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      taskQueue,
      args: [input],
      typedSearchAttributes: requestSearchAttributes(request),
      memo: { organizationId: request.organizationId, amount: request.amount, currency: request.currency },
    }),
  );
  if (subscriptionInput !== null) {
    await startOnce(() =>
      client.workflow.start<typeof subscription>('subscription', {
        workflowId: subscriptionWorkflowId(request.id),
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        taskQueue,
        args: [subscriptionInput],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: searchAttributes.organizationId, value: String(request.organizationId) },
          { key: searchAttributes.phoneNumber, value: request.phoneNumber },
          { key: searchAttributes.currency, value: request.currency },
        ]),
      }),
    );
  }
}

export type LaunchDeps = { sql: Sql; client: Client; taskQueue: string; failedPromptRetrySeconds: number };

/**
 * After a request is committed: hands its events to dispatch, starts its workflows and notes the
 * start. A failure here loses nothing; the outbox sweep starts whatever did not start.
 */
export async function launchCollectionRequest(deps: LaunchDeps, created: Pick<CreatedRequest, 'request' | 'events'>, onError: (error: unknown) => void): Promise<void> {
  const dispatch = createEventDispatcher(deps.client, deps.taskQueue, (error) => onError(error));
  const start = async () => {
    try {
      const { request } = created;
      const network = networkByName(request.network);
      const input = workflowInputFor(request, { failedPromptRetrySeconds: deps.failedPromptRetrySeconds, networkPullsFunds: network?.pullsFunds ?? false });
      await startRequestWorkflows(deps.client, deps.taskQueue, request, input, subscriptionInputFor(request));
      await deps.sql`update collection_requests set workflow_started_at = now() where id = ${request.id} and workflow_started_at is null`;
    } catch (error) {
      onError(error);
    }
  };
  // Independent of each other: the events' dispatch and the request's workflow start side by side.
  await Promise.all([dispatch(created.events), start()]);
}
