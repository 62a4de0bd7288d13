// Records a finished workflow's history for the replay test (test/histories), in the JSON form
// `temporal workflow show --output json` prints, so a later change of the workflow's shape that
// would break executions already in flight fails `npm test`.
//   TEMPORAL_ADDRESS=127.0.0.1:7233 bun scripts/record-history.ts <workflow id> test/histories/<name>.json
import { writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { loadConfig } from '../src/config';
import { connectClient } from '../src/temporal/connection';

const [workflowId, file] = process.argv.slice(2);
if (!workflowId || !file) throw new Error('usage: record-history.ts WORKFLOW_ID FILE');
const client = await connectClient(loadConfig().temporal);
const history = await client.workflow.getHandle(workflowId).fetchHistory();
writeFileSync(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
process.stdout.write(`${workflowId}: ${history.events?.length ?? 0} events written to ${file}\n`);
await client.connection.close();
