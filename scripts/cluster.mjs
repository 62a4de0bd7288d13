// `npm run cluster`, `npm run cluster:stop`, `npm run cluster:faults`: the service on six nodes and a
// load balancer, in network namespaces on this machine (test/cluster/main.ts; docs/operations.md,
// Several hosts). This prepares what they need (dependencies, the Temporal CLI, the production
// Temporal server built as the parity lane builds it, HAProxy from Debian's packages), then runs
// the cluster program with Bun. Needs the machine's root user.
import { spawn } from 'node:child_process';
import { ROOT, binPath, ensureDependencies, ensureHaproxy, ensureTemporalCli } from './infra.mjs';

const args = process.argv.slice(2);
const command = args[0] ?? 'start';

if (process.getuid?.() !== 0) {
  process.stderr.write(
    '[collections] the cluster needs the machine’s root user (it makes network namespaces); skipped\n',
  );
  process.exit(command === 'faults' && process.env.CLUSTER_REQUIRED === 'true' ? 1 : 0);
}
if (command !== 'stop') {
  ensureDependencies();
  ensureTemporalCli();
  ensureHaproxy();
  const { composeFile, composeServerVersion, ensureTemporalServer } = await import('./temporal-server.mjs');
  ensureTemporalServer(composeServerVersion(composeFile()));
}
const child = spawn(binPath('bun'), ['test/cluster/main.ts', ...args], { cwd: ROOT, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
