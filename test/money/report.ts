/** The exactly-once checker's report: what ran, what was found, and how to replay each finding. */
import type { CheckResult } from './run';

const replay = (seed: number, index: number | null) =>
  index === null ? `MONEY_SEED=${seed}` : `MONEY_SEED=${seed} MONEY_ONLY=${index}`;

/** The report as markdown (bench/results/exactly-once-<date>.md, and the test's output). */
export function reportOf(result: CheckResult, context: { timeoutMs: number; windowSeconds: number | null }): string {
  const lines = [
    `# Exactly-once check, ${new Date().toISOString().slice(0, 10)}`,
    '',
    `- seed: ${result.seed}`,
    `- schedules: ${result.schedules}`,
    `- operations: ${[...result.operations.values()].reduce((sum, count) => sum + count, 0)}`,
    `- operator timeout: ${context.timeoutMs} ms; in-flight window: ${context.windowSeconds === null ? "each connector's own" : `${context.windowSeconds} s`}`,
    `- duration: ${(result.durationMs / 1000).toFixed(0)} s`,
    `- anomalies: ${result.findings.length}`,
    `- only on the operator's statement (found by reconciliation; not anomalies): ${result.onStatement.length}`,
    `- not final at the deadline while an operator was not final either (not anomalies): ${result.waiting.length}`,
    '',
    '## Operations by network and kind',
    '',
    '| network | kind | schedules |',
    '| --- | --- | ---: |',
    ...[...result.operations.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, count]) => {
        const kind = name.split(' ').at(-1)!;
        return `| ${name.slice(0, -kind.length - 1)} | ${kind} | ${count} |`;
      }),
    '',
    '## Anomalies',
    '',
  ];
  if (result.findings.length === 0) lines.push('None.');
  for (const finding of result.findings)
    lines.push(
      `- (${finding.rule}) ${finding.phone ?? ''} ${finding.text}`,
      `  - schedule ${finding.index ?? '-'}: ${finding.schedule ?? 'batch-wide'}`,
      `  - replay: \`${replay(finding.seed, finding.index)} npm test -- test/money\``,
    );
  if (result.onStatement.length > 0) {
    lines.push(
      '',
      "## Only on the operator's statement (found by reconciliation)",
      '',
      "Debits no service can learn of (an STK push whose answer and result callback M-Pesa both never delivered), each listed as missing on our side by `reconcile` against M-Pesa's statement.",
      '',
    );
    for (const each of result.onStatement)
      lines.push(
        `- ${each.phone} ${each.route} ${each.receipt} ${each.amount}`,
        `  - schedule ${each.index}: ${each.schedule}`,
        `  - replay: \`${replay(each.seed, each.index)} npm test -- test/money\``,
      );
  }
  if (result.waiting.length > 0) {
    lines.push('', '## Waiting at the deadline', '');
    for (const each of result.waiting) lines.push(`- schedule ${each.schedule.index} ${each.phone}: ${each.waiting}`);
  }
  return `${lines.join('\n')}\n`;
}
