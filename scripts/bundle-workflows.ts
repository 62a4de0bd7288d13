// Bundles the workflow code once (used by the test run so each test worker starts quickly).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../src/telemetry/worker';

const output = process.argv[2];
if (!output) throw new Error('usage: bundle-workflows.ts OUTPUT_FILE');
const { code } = await bundleWorkflowCode({
  workflowsPath: fileURLToPath(new URL('../src/workflows/index.ts', import.meta.url)),
  // The same interceptors the worker bundles with when it has no prebuilt bundle.
  workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
  logger: { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: console.warn, error: console.error },
});
writeFileSync(output, code);
