/**
 * The earlier workflow types the worker still registers (src/workflows/registry.ts), checked against
 * the Temporal namespace: each with its open executions, what replaced it, and whether it may be
 * removed now. Exit 1 while any type listed may not.
 */
import type { Client } from '@temporalio/client';
import { connectClient } from '../temporal/connection';
import { LEGACY_WORKFLOWS, type LegacyWorkflow } from '../workflows/registry';
import { UsageError, print, type Command } from './cli';

/** The visibility query of a type's open executions (the same text `temporal workflow count --query` takes). */
const openExecutionsQuery = (type: string): string => `WorkflowType = '${type}' AND ExecutionStatus = 'Running'`;

type LegacyStatus = {
  type: LegacyWorkflow;
  query: string;
  open: number;
  replacedBy: string;
  openUntil: string;
  reachedFrom: readonly LegacyWorkflow[];
  /** The types whose open executions keep it: itself, and any earlier type that can still reach it. */
  waitingFor: LegacyWorkflow[];
  removable: boolean;
};

/** Every earlier type's open executions in the client's namespace, and what that allows. */
async function legacyStatuses(client: Client): Promise<LegacyStatus[]> {
  const types = Object.keys(LEGACY_WORKFLOWS) as LegacyWorkflow[];
  const counts = await Promise.all(types.map(async (type) => (await client.workflow.count(openExecutionsQuery(type))).count));
  const open = new Map(types.map((type, index) => [type, counts[index] ?? 0]));
  const waitingFor = (type: LegacyWorkflow): LegacyWorkflow[] =>
    [...new Set([...((open.get(type) ?? 0) > 0 ? [type] : []), ...LEGACY_WORKFLOWS[type].reachedFrom.flatMap(waitingFor)])];
  return types.map((type) => {
    const waiting = waitingFor(type);
    return { type, query: openExecutionsQuery(type), open: open.get(type) ?? 0, ...LEGACY_WORKFLOWS[type], waitingFor: waiting, removable: waiting.length === 0 };
  });
}

function describeStatus(status: LegacyStatus): string {
  const verdict = status.removable
    ? 'may be removed now'
    : `still in use: open executions of ${status.waitingFor.join(', ')}`;
  const reached = status.reachedFrom.length > 0 ? `; can still be started by ${status.reachedFrom.join(', ')}` : '';
  return `${status.type}: ${status.open} open, ${verdict}\n  replaced by ${status.replacedBy}; open executions end ${status.openUntil}${reached}`;
}

export const workflowCommands: Record<string, Command> = {
  'legacy-workflows': {
    usage: `legacy-workflows [--type ${Object.keys(LEGACY_WORKFLOWS).join('|')}] [--json]`,
    async run({ config, values }) {
      const types = Object.keys(LEGACY_WORKFLOWS);
      if (values.type !== undefined && !types.includes(values.type)) throw new UsageError(`--type takes one of ${types.join(', ')}`);
      const client = await connectClient(config.temporal);
      try {
        const statuses = (await legacyStatuses(client)).filter((status) => values.type === undefined || status.type === values.type);
        const kept = statuses.filter((status) => !status.removable).length;
        print(values.json, { namespace: config.temporal.namespace, types: statuses }, [
          `earlier workflow types in namespace ${config.temporal.namespace} (open: ${openExecutionsQuery('<type>')})`,
          ...statuses.map(describeStatus),
          kept === 0 ? `every type listed may be removed now` : `${kept} of ${statuses.length} type(s) may not be removed yet`,
        ]);
        if (kept > 0) process.exitCode = 1;
      } finally {
        await client.connection.close();
      }
    },
  },
};
