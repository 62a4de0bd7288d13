/**
 * Operator CLI (`npm run admin -- <command>`): no API route issues organizations and keys, so
 * operators do it here. `migrate` creates the database and applies the migrations; the
 * other commands live in src/admin/, one module per group (organizations and their settings,
 * money, webhooks, networks, settlements, sweeps); `npm run admin` alone
 * prints them all.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from './config';
import { createSql } from './db';
import { ensureDatabase, migrate } from './db/migrate';
import { OPTIONS, UsageError, print, type Command, type Options } from './admin/cli';
import { moneyCommands } from './admin/money';
import { networkCommands } from './admin/network';
import { organizationCommands } from './admin/organizations';
import { settlementCommands } from './admin/settlements';
import { sweepCommands } from './admin/sweeps';
import { webhookCommands } from './admin/webhooks';

const COMMANDS: Record<string, Command> = {
  ...organizationCommands,
  ...moneyCommands,
  ...webhookCommands,
  ...networkCommands,
  ...settlementCommands,
  ...sweepCommands,
};

const USAGE = [
  'usage: npm run admin -- <command>',
  '  migrate',
  ...Object.values(COMMANDS).map((command) => `  ${command.usage}`),
].join('\n');

function parseArguments(argv: string[]): { positionals: string[]; values: Options } {
  try {
    const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
    return { positionals, values: values as Options };
  } catch (cause) {
    throw new UsageError((cause as Error).message, { cause });
  }
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArguments(argv);
  const command = positionals.join(' ');
  const config = loadConfig();
  if (command === 'migrate') {
    const created = await ensureDatabase(config.databaseUrl);
    const applied = await migrate(config.databaseUrl);
    print(values.json, { databaseCreated: created, applied }, [
      created ? 'database created' : 'database exists',
      applied.length > 0 ? `applied ${applied.join(', ')}` : 'migrations up to date',
    ]);
    return;
  }
  const found = COMMANDS[command];
  if (found === undefined) throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  const sql = createSql(config.databaseUrl, 2);
  try {
    await found.run({ config, sql, values, command });
  } finally {
    await sql.end({ timeout: 5 });
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) process.stderr.write(`${error.message}\n${USAGE}\n`);
  else process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
});
