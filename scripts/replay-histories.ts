// Replays recorded workflow histories against the current workflow code, on Node (the runtime the
// worker ships on). Exits non-zero when any history no longer replays: such a change would break
// workflows already running in production.
//   node --import tsx scripts/replay-histories.ts test/histories
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../src/telemetry/worker';

const directory = process.argv[2];
if (!directory) throw new Error('usage: replay-histories.ts DIRECTORY');
const files = (await readdir(directory)).filter((file) => file.endsWith('.json')).sort();
const bundlePath = process.env.WORKFLOW_BUNDLE_PATH;
const source = bundlePath
  ? { workflowBundle: { codePath: bundlePath } }
  : {
      workflowsPath: fileURLToPath(new URL('../src/workflows/index.ts', import.meta.url)),
      interceptors: { workflowModules: WORKFLOW_INTERCEPTOR_MODULES },
    };
let failures = 0;
for (const file of files) {
  const history = JSON.parse(await readFile(join(directory, file), 'utf8'));
  try {
    await Worker.runReplayHistory(source, history, file);
    process.stdout.write(`replayed ${file}\n`);
  } catch (error) {
    failures += 1;
    process.stdout.write(`FAILED ${file}: ${error instanceof Error ? error.message : String(error)}\n`);
  }
}
process.stdout.write(`${files.length - failures} of ${files.length} histories replayed\n`);
process.exit(failures > 0 || files.length === 0 ? 1 : 0);
