/**
 * What every admin command shares: its context (configuration, database, options), the usage
 * error that prints the usage, output as text or JSON, and the option readers.
 */
import type { Config } from '../config';
import type { Sql } from '../db';
import { asId, type OrganizationId } from '../domain/ids';

export class UsageError extends Error {}

/** The options `npm run admin` understands (node:util parseArgs). */
export const OPTIONS = {
  name: { type: 'string' },
  org: { type: 'string' },
  currency: { type: 'string' },
  amount: { type: 'string' },
  'verification-url': { type: 'string' },
  'accept-by-default': { type: 'string' },
  reads: { type: 'string' },
  writes: { type: 'string' },
  version: { type: 'string' },
  username: { type: 'string' },
  network: { type: 'string' },
  route: { type: 'string' },
  routes: { type: 'string' },
  operation: { type: 'string' },
  password: { type: 'string' },
  kind: { type: 'string' },
  account: { type: 'string' },
  limit: { type: 'string' },
  collection: { type: 'string' },
  reason: { type: 'string' },
  id: { type: 'string' },
  email: { type: 'string' },
  role: { type: 'string' },
  date: { type: 'string' },
  file: { type: 'string' },
  type: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

export type Options = {
  [K in keyof typeof OPTIONS]: (typeof OPTIONS)[K] extends { type: 'boolean' } ? boolean : string | undefined;
};

export type CommandContext = { config: Config; sql: Sql; values: Options; command: string };

/** A command: its usage line(s) and what it does. */
export type Command = { usage: string; run: (context: CommandContext) => Promise<void> };

export function print(json: boolean, value: Record<string, unknown>, lines: string[]): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${lines.join('\n')}\n`);
}

/** `--org`: the organization an operator names (a positive whole number), or the usage error. */
export function organizationId(raw: string | undefined): OrganizationId {
  if (raw === undefined || !/^\d{1,15}$/.test(raw) || Number(raw) === 0)
    throw new UsageError('--org takes an organization id');
  return asId('Organization', Number(raw));
}

/** A row id option (`--collection`, `--id`): a whole number, or the usage error `message`. */
export function rowId(raw: string | undefined, message: string): number {
  if (!/^\d{1,15}$/.test(raw ?? '')) throw new UsageError(message);
  return Number(raw);
}
