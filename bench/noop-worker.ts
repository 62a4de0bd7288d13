/**
 * Bench-only worker (Node) for the baseline workflows of bench/noop-workflow.ts and their
 * activities, on its own task queue: what the benchmarks compare the service with. The floor's
 * activity POSTs over HTTPS like a webhook delivery, trusting the bench receiver's certificate.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { rootCertificates } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const taskQueue = process.env.TASK_QUEUE ?? 'bench-noop';
const ca = process.env.WEBHOOK_CA_FILE
  ? [...rootCertificates, readFileSync(process.env.WEBHOOK_CA_FILE, 'utf8')]
  : undefined;

/** One HTTPS POST, answered within 5 s (a webhook's timeout); resolves with the status code. */
function post(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        ...(ca ? { ca } : {}),
        timeout: 5000,
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error('timeout')));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

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
  activities: {
    async benchNoopActivity() {},
    async benchPostActivity({ url, body }: { url: string; body: string }) {
      return await post(url, body);
    },
  },
});
process.stdout.write('bench-noop worker running\n');
try {
  await worker.run();
} finally {
  await connection.close();
}
