/**
 * The earlier workflow types' removal rule (docs/architecture.md#retiring-a-workflow-shape), checked
 * against the test Temporal server by `npm run admin -- legacy-workflows`: a type with no open
 * execution, and none of an earlier type that can start it, may go (exit 0); an open one keeps it
 * (exit 1). The executions are started on a task queue no worker polls, so they stay open until
 * terminated.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { LEGACY_WORKFLOWS } from '../../src/workflows/registry';
import { ROOT, eventually, testClient, uniqueTaskQueue } from '../helpers';

type Status = { type: string; query: string; open: number; replacedBy: string; openUntil: string; reachedFrom: string[]; waitingFor: string[]; removable: boolean };

const started: string[] = [];

afterAll(async () => {
  const client = await testClient();
  await Promise.all(started.map((workflowId) => client.workflow.getHandle(workflowId).terminate('test over').catch(() => {})));
});

function legacyWorkflows(...args: string[]) {
  const result = spawnSync(process.execPath, ['src/admin.ts', 'legacy-workflows', ...args], { cwd: ROOT, env: process.env, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function statusOf(type: string): { exit: number | null; status: Status } {
  const result = legacyWorkflows('--type', type, '--json');
  const { types } = JSON.parse(result.stdout) as { types: Status[] };
  expect(types).toHaveLength(1);
  return { exit: result.status, status: types[0]! };
}

/** Starts an execution of an earlier type that no worker runs: open until terminated. */
async function startOpen(type: string, prefix: string): Promise<string> {
  const client = await testClient();
  const workflowId = `${prefix}-${Date.now()}`;
  await client.workflow.start(type, { taskQueue: uniqueTaskQueue('no-worker'), workflowId, args: [] });
  started.push(workflowId);
  return workflowId;
}

describe('legacy-workflows', () => {
  test('lists every earlier type with what replaced it, the visibility query of its open executions and its verdict', () => {
    const result = legacyWorkflows('--json');
    const { types } = JSON.parse(result.stdout) as { types: Status[] };
    expect(types.map((status) => status.type)).toEqual(Object.keys(LEGACY_WORKFLOWS));
    for (const status of types) {
      expect(status.query).toBe(`WorkflowType = '${status.type}' AND ExecutionStatus = 'Running'`);
      expect(status.replacedBy).not.toBe('');
      expect(status.removable).toBe(status.waitingFor.length === 0);
    }
    expect(types.find((status) => status.type === 'webhookDelivery')?.reachedFrom).toEqual(['eventDispatch']);
    expect(result.status).toBe(types.every((status) => status.removable) ? 0 : 1);
    // No test starts the first shapes of the request workflow: none open, so it may go.
    expect(statusOf('collectionRequest')).toEqual({ exit: 0, status: expect.objectContaining({ open: 0, waitingFor: [], removable: true }) });
    const unknown = legacyWorkflows('--type', 'collectionRequestV3');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('--type takes one of collectionRequest');
  });

  test('an open execution of an earlier type keeps it until it ends', async () => {
    const workflowId = await startOpen('collectionRequest', 'legacy-open');
    const kept = await eventually('visibility to count the open execution', async () => {
      const checked = statusOf('collectionRequest');
      return checked.status.open === 1 ? checked : undefined;
    });
    expect(kept).toEqual({ exit: 1, status: expect.objectContaining({ waitingFor: ['collectionRequest'], removable: false }) });
    const text = legacyWorkflows('--type', 'collectionRequest');
    expect(text.status).toBe(1);
    expect(text.stdout).toContain('collectionRequest: 1 open, still in use: open executions of collectionRequest');
    expect(text.stdout).toContain('replaced by collectionRequestV3');

    await (await testClient()).workflow.getHandle(workflowId).terminate('the execution ends');
    await eventually('visibility to count none open', async () => statusOf('collectionRequest').status.open === 0);
    expect(statusOf('collectionRequest')).toEqual({ exit: 0, status: expect.objectContaining({ removable: true }) });
  });

  test('a type another earlier type can still start is kept while that one has open executions', async () => {
    const workflowId = await startOpen('eventDispatch', 'legacy-starter');
    const kept = await eventually('visibility to count the starter', async () => {
      const checked = statusOf('webhookDelivery');
      return checked.status.waitingFor.includes('eventDispatch') ? checked : undefined;
    });
    expect(kept.exit).toBe(1);
    expect(kept.status.removable).toBe(false);
    await (await testClient()).workflow.getHandle(workflowId).terminate('the execution ends');
    await eventually('the starter to be counted gone', async () => !statusOf('webhookDelivery').status.waitingFor.includes('eventDispatch'));
  });
});
