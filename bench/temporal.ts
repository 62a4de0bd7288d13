/**
 * What Temporal does for a phase of the benchmarks, read from the server: the executions it
 * started, their history events (and what runs already open added to theirs), visibility writes,
 * and the workflow tasks in the histories (the longest, failed, timed out). bench/run.ts measures
 * the sweep with it, bench/delivery.ts the delivery phases.
 *
 * `scope` narrows every visibility query (`TaskQueue = '…'` for the service's own executions); an
 * empty scope takes every execution of the namespace.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';

export type TemporalCost = { executions: number; historyEvents: number; visibilityWrites: number };
export type OpenRuns = Map<string, { runId: string; historyLength: number }>;
export type WorkflowRun = { workflowId: string; runId: string };

const scoped = (scope: string, clause: string) => (scope ? `${scope} AND (${clause})` : clause);

export async function listed(client: Client, query: string, limit = Infinity): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const execution of client.workflow.list({ query })) {
    if (found.length >= limit) break;
    found.push(execution);
  }
  return found;
}

/** The history length of a run now (visibility's figure for an open run is the one of its last visibility write). */
const historyLengthOf = async (client: Client, workflowId: string, runId: string): Promise<number> =>
  Number((await client.workflow.getHandle(workflowId, runId).describe()).raw.workflowExecutionInfo?.historyLength ?? 0);

/** The executions open now (the long-running ones: the webhook dispatchers), with their history lengths. */
export async function openRuns(client: Client, scope: string): Promise<OpenRuns> {
  const open = await listed(client, scoped(scope, `ExecutionStatus = 'Running'`));
  return new Map(
    await Promise.all(
      open.map(
        async (execution) =>
          [
            execution.workflowId,
            {
              runId: execution.runId,
              historyLength: await historyLengthOf(client, execution.workflowId, execution.runId),
            },
          ] as const,
      ),
    ),
  );
}

async function upsertsOf(client: Client, workflowId: string, runId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? []).filter(
    (event) => event.upsertWorkflowSearchAttributesEventAttributes || event.workflowPropertiesModifiedEventAttributes,
  ).length;
}

/** Temporal's work since `since`, beyond what the runs open before (`before`, read with the same scope) had done. */
export async function temporalCost(
  client: Client,
  scope: string,
  since: Date,
  before: OpenRuns,
): Promise<TemporalCost> {
  // Visibility is eventually consistent: wait until the count of new executions stops moving.
  const countQuery = scoped(scope, `StartTime >= '${since.toISOString()}'`);
  for (let last = -1, stable = 0; stable < 3; await Bun.sleep(300)) {
    const { count } = await client.workflow.count(countQuery);
    stable = count === last ? stable + 1 : 0;
    last = count;
  }
  const started = (await listed(client, countQuery)).filter(
    (execution) => !before.has(execution.workflowId) || before.get(execution.workflowId)!.runId !== execution.runId,
  );
  const cost: TemporalCost = { executions: started.length, historyEvents: 0, visibilityWrites: 0 };
  for (let index = 0; index < started.length; index += 16) {
    const upserts = await Promise.all(
      started.slice(index, index + 16).map((execution) => upsertsOf(client, execution.workflowId, execution.runId)),
    );
    for (const [offset, execution] of started.slice(index, index + 16).entries()) {
      const running = execution.status.name === 'RUNNING';
      cost.historyEvents += running
        ? await historyLengthOf(client, execution.workflowId, execution.runId)
        : execution.historyLength;
      cost.visibilityWrites += 1 + (running ? 0 : 1) + upserts[offset]!;
    }
  }
  for (const [workflowId, run] of before) {
    const now = await client.workflow.getHandle(workflowId, run.runId).describe();
    cost.historyEvents += (await historyLengthOf(client, workflowId, run.runId)) - run.historyLength;
    if (now.status.name !== 'RUNNING') cost.visibilityWrites += 1;
  }
  return cost;
}

/** Every run of a workflow id (its continue-as-new chain), the current one included. */
export async function runsOf(client: Client, workflowId: string): Promise<WorkflowRun[]> {
  const runIds = new Set<string>();
  for (const execution of await listed(client, `WorkflowId = '${workflowId}'`)) runIds.add(execution.runId);
  runIds.add((await client.workflow.getHandle(workflowId).describe()).runId);
  return [...runIds].map((runId) => ({ workflowId, runId }));
}

/** Every run open now or closed since `since` (at most `limit`): the runs that were alive during a phase begun then. */
export async function runsAliveSince(
  client: Client,
  since: Date,
  limit: number,
): Promise<{ runs: WorkflowRun[]; truncated: boolean }> {
  const found = await listed(client, `ExecutionStatus = 'Running' OR CloseTime >= '${since.toISOString()}'`, limit + 1);
  return {
    runs: found.slice(0, limit).map(({ workflowId, runId }) => ({ workflowId, runId })),
    truncated: found.length > limit,
  };
}

export type HistoryFacts = {
  runs: number;
  events: number;
  maxTaskMs: number;
  slowTasks: number;
  failed: number;
  timedOut: number;
  maxInputBytes: number;
  /** Failed and timed-out workflow tasks by workflow type and kind (`webhookDispatcher: timed out, schedule-to-start`). */
  problems: Record<string, number>;
};

/** The kinds of workflow task timeout (temporal.api.enums.v1.TimeoutType): schedule-to-start only happens on a worker's sticky queue. */
const TIMEOUT_KINDS: Record<number, string> = {
  1: 'start-to-close',
  2: 'schedule-to-start (a sticky queue whose worker did not poll)',
};

/**
 * The histories of `runs`: events, the longest workflow task (started → completed), how many took
 * over 1 s, failed (WorkflowTaskFailed) or timed out (WorkflowTaskTimedOut), and the largest run
 * input (start or continue-as-new) in bytes. With `since`, the tasks and failures counted are those
 * of events at or after it (the events counted are all of them).
 */
export async function historyFacts(client: Client, runs: WorkflowRun[], since?: Date): Promise<HistoryFacts> {
  const seconds = (time: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    time ? Number(String(time.seconds ?? 0)) + (time.nanos ?? 0) / 1e9 : NaN;
  const inputBytes = (payloads: { data?: Uint8Array | null }[] | null | undefined) =>
    (payloads ?? []).reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
  const from = since ? since.getTime() / 1000 : -Infinity;
  const result: HistoryFacts = {
    runs: runs.length,
    events: 0,
    maxTaskMs: 0,
    slowTasks: 0,
    failed: 0,
    timedOut: 0,
    maxInputBytes: 0,
    problems: {},
  };
  const problem = (workflowType: string, kind: string) => {
    result.problems[`${workflowType}: ${kind}`] = (result.problems[`${workflowType}: ${kind}`] ?? 0) + 1;
  };
  for (let index = 0; index < runs.length; index += 16) {
    const histories = await Promise.all(
      runs
        .slice(index, index + 16)
        .map(({ workflowId, runId }) => client.workflow.getHandle(workflowId, runId).fetchHistory()),
    );
    for (const history of histories) {
      const startedAt = new Map<string, number>();
      let workflowType = 'unknown';
      for (const event of history.events ?? []) {
        result.events += 1;
        const started = event.workflowExecutionStartedEventAttributes;
        if (started) workflowType = started.workflowType?.name ?? workflowType;
        const input = started?.input ?? event.workflowExecutionContinuedAsNewEventAttributes?.input;
        if (input) result.maxInputBytes = Math.max(result.maxInputBytes, inputBytes(input.payloads));
        if (seconds(event.eventTime) < from) continue;
        if (event.workflowTaskStartedEventAttributes) startedAt.set(String(event.eventId), seconds(event.eventTime));
        const completed = event.workflowTaskCompletedEventAttributes;
        if (completed) {
          const took = (seconds(event.eventTime) - (startedAt.get(String(completed.startedEventId)) ?? NaN)) * 1000;
          if (Number.isFinite(took)) {
            result.maxTaskMs = Math.max(result.maxTaskMs, took);
            if (took > 1000) result.slowTasks += 1;
          }
        }
        if (event.workflowTaskFailedEventAttributes) {
          result.failed += 1;
          problem(workflowType, `failed, cause ${event.workflowTaskFailedEventAttributes.cause ?? 'unknown'}`);
        }
        if (event.workflowTaskTimedOutEventAttributes) {
          result.timedOut += 1;
          const kind = event.workflowTaskTimedOutEventAttributes.timeoutType ?? 0;
          problem(workflowType, `timed out, ${TIMEOUT_KINDS[kind] ?? `timeout type ${kind}`}`);
        }
      }
    }
  }
  return result;
}
