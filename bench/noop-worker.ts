/**
 * Bench-only worker (Node) for the baseline workflows of bench/noop-workflow.ts and their empty
 * activity, on its own task queue: what the benchmarks compare the service with.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const taskQueue = process.env.TASK_QUEUE ?? 'bench-noop';
const { code } = await bundleWorkflowCode({
  workflowsPath: fileURLToPath(new URL('./noop-workflow.ts', import.meta.url)),
  logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
});
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue,
  workflowBundle: { code },
  activities: { async benchNoopActivity() {} },
});
process.stdout.write('bench-noop worker running\n');
try {
  await worker.run();
} finally {
  await connection.close();
}
