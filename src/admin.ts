/**
 * Operator CLI (`npm run admin -- <command>`): api.md does not say how organizations and keys are
 * issued, so operators do it here.
 *
 *   migrate                                   create the database if missing, apply migrations
 *   org create --name NAME [--json]           organization + first user (may manage it) + API key
 *   key create --org ID [--json]              another API key for the organization
 *   user create --org ID --email E --password P [--manage] [--json]   a web console user
 *   wallet fund --org ID --currency CUR --amount A [--json]
 *   settings set --org ID [--verification-url URL] [--accept-by-default true|false]
 *   throttle set --org ID [--reads N|default] [--writes N|default]   requests per throttle window
 *   version set --org ID --version vN         the organization's saved API version
 *   webhooks secret show|rotate --org ID [--json]      the Standard Webhooks signing secret
 *   webhooks basic-auth set --org ID --username U --password P
 *   webhooks basic-auth clear --org ID                 HTTP Basic credentials of outgoing deliveries
 *   network secret create --network NAME [--json]      the secret a network's payment callbacks carry
 *   network register-urls [--json]                     registers the paybill's validation and confirmation URLs with Daraja
 *   wallet show --org ID [--json]                      the organization's wallets, balances checked against their transactions
 *   wallet transactions --org ID [--account ID] [--limit N] [--json]
 *   collection reverse --org ID --collection ID [--reason R] [--json]   sends a successful collection back
 *   sweeps failures [--json]                           rows the sweeps set aside, with their errors
 *   sweeps retry --kind KIND --id ROW                  puts a set-aside row back for the next sweep run
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { digestKey } from './auth/keys';
import { networkByName } from './domain/networks';
import { loadConfig } from './config';
import { createSql } from './db';
import { ensureDatabase, migrate } from './db/migrate';
import { MAX_FUNDING_AMOUNT, groupedAmount, isCurrency, parsePositiveAmount } from './domain/money';
import { formatApiVersion, parseApiVersion } from './domain/versions';
import { checkCallbackUrl } from './domain/urls';
import { createApiKey, createOrganization, fundWallet, setApiVersion, updateCollectionSettings, verificationUrlRules } from './services/organizations';
import { SWEEP_KINDS, listSweepFailures, retrySweepRow, type SweepKind } from './services/sweeps';
import { listTransactions, listWallets, walletsOutOfBalance } from './services/wallets';
import { serializeAccount, serializeLedgerTransaction } from './domain/money-out';
import { reverseCollection } from './services/reversals';
import { findApiError } from './http/errors';
import { connectClient } from './temporal/connection';
import { createConnectors } from './network/connections';
import { DARAJA_CALLBACK_PATHS } from './network/daraja';
import { launcherFromConfig } from './temporal/launcher';
import { setThrottleLimits } from './services/throttling';
import { UserInputError, createUser } from './services/users';
import { MANAGE_ORGANIZATION } from './domain/permissions';
import { rotateSigningSecret, setBasicCredentials, showSigningSecret, type SigningSecretView } from './services/webhooks';

class UsageError extends Error {}

const USAGE = `usage: npm run admin -- <command>
  migrate
  org create --name NAME [--json]
  key create --org ID [--json]
  user create --org ID --email EMAIL --password PASSWORD [--manage] [--json]
  wallet fund --org ID --currency BXC|UGX|KES --amount AMOUNT [--json]
  settings set --org ID [--verification-url URL] [--accept-by-default true|false] [--json]
  throttle set --org ID [--reads N|default] [--writes N|default] [--json]
  version set --org ID --version v1|v2|v3|v4 [--json]
  webhooks secret show --org ID [--json]
  webhooks secret rotate --org ID [--json]
  webhooks basic-auth set --org ID --username USER --password PASSWORD
  webhooks basic-auth clear --org ID
  network secret create --network NAME [--json]
  network register-urls [--json]
  wallet show --org ID [--json]
  wallet transactions --org ID [--account ID] [--limit N] [--json]
  collection reverse --org ID --collection ID [--reason TEXT] [--json]
  sweeps failures [--json]
  sweeps retry --kind ${SWEEP_KINDS.join('|')} --id ROW [--json]`;

/** A per-window limit: a positive whole number, or `default` for the configured one (stored as null). */
function throttleLimit(option: string, raw: string | undefined): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'default') return null;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw new UsageError(`--${option} takes a positive whole number or "default"`);
  return Number(raw);
}

function organizationId(raw: string | undefined): number {
  if (raw === undefined || !/^\d+$/.test(raw)) throw new UsageError('--org takes an organization id');
  return Number(raw);
}

function print(json: boolean, value: Record<string, unknown>, lines: string[]): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${lines.join('\n')}\n`);
}

function secretLines(view: SigningSecretView): string[] {
  return [
    `organization ${view.organizationId} signing secret ${view.signingSecret}`,
    ...(view.previousSecretExpiresAt ? [`the previous secret also signs until ${view.previousSecretExpiresAt.toISOString()}`] : []),
    `HTTP Basic credentials: ${view.basicAuth ? 'set' : 'none'}`,
  ];
}

function parseArguments(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
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
        password: { type: 'string' },
        kind: { type: 'string' },
        account: { type: 'string' },
        limit: { type: 'string' },
        collection: { type: 'string' },
        reason: { type: 'string' },
        id: { type: 'string' },
        email: { type: 'string' },
        manage: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    });
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
  const sql = createSql(config.databaseUrl, 2);
  try {
    switch (command) {
      case 'org create': {
        if (!values.name?.trim()) throw new UsageError('--name is required');
        const created = await createOrganization(sql, values.name.trim());
        print(values.json, created, [
          `organization ${created.organization.id} (${created.organization.name})`,
          `user ${created.user.id} with permission "${created.user.permissions.join('", "')}"`,
          `API key ${created.apiKey}  (shown once; only its digest is stored)`,
        ]);
        return;
      }
      case 'key create': {
        const created = await createApiKey(sql, organizationId(values.org));
        print(values.json, created, [`API key ${created.apiKey}  (shown once; only its digest is stored)`]);
        return;
      }
      case 'user create': {
        const org = organizationId(values.org);
        if (!values.email) throw new UsageError('--email is required');
        if (!values.password) throw new UsageError('--password is required');
        let user;
        try {
          user = await createUser(sql, { organizationId: org, email: values.email, password: values.password, manage: values.manage });
        } catch (error) {
          if (error instanceof UserInputError) throw new UsageError(`--${error.field}: ${error.message}`, { cause: error });
          throw error;
        }
        print(values.json, { user }, [
          `console user ${user.id} (${user.email}) in organization ${org}` +
            (values.manage ? ` with permission "${MANAGE_ORGANIZATION}"` : ' (no permission to manage the organization)'),
        ]);
        return;
      }
      case 'wallet fund': {
        const currency = values.currency?.toUpperCase() ?? '';
        if (!isCurrency(currency)) throw new UsageError('--currency must be one of BXC, UGX, KES');
        const amount = parsePositiveAmount(values.amount ?? '', MAX_FUNDING_AMOUNT);
        if (amount === null) throw new UsageError(`--amount must be a positive decimal with at most 4 decimals, at most ${groupedAmount(MAX_FUNDING_AMOUNT)}`);
        const funding = await fundWallet(sql, organizationId(values.org), currency, amount);
        print(values.json, funding, [`wallet ${funding.accountId} balance ${funding.balance} ${currency}`]);
        return;
      }
      case 'settings set': {
        const acceptByDefault = values['accept-by-default'];
        if (acceptByDefault !== undefined && !['true', 'false'].includes(acceptByDefault)) {
          throw new UsageError('--accept-by-default takes true or false');
        }
        let verificationUrl = values['verification-url'];
        if (verificationUrl !== undefined && verificationUrl !== '') {
          const checked = checkCallbackUrl(verificationUrl, verificationUrlRules(config.sandbox));
          if (checked.problem !== undefined) throw new UsageError(`--verification-url: ${checked.problem}`);
          verificationUrl = checked.url;
        }
        const settings = await updateCollectionSettings(sql, organizationId(values.org), {
          ...(verificationUrl !== undefined ? { verificationUrl: verificationUrl === '' ? null : verificationUrl } : {}),
          ...(acceptByDefault !== undefined ? { acceptByDefault: acceptByDefault === 'true' } : {}),
        });
        print(values.json, settings, [
          `organization ${settings.id}: verification URL ${settings.verificationUrl ?? '(none)'}, accept by default ${settings.acceptByDefault}`,
        ]);
        return;
      }
      case 'throttle set': {
        const reads = throttleLimit('reads', values.reads);
        const writes = throttleLimit('writes', values.writes);
        if (reads === undefined && writes === undefined) throw new UsageError('throttle set needs --reads or --writes');
        const limits = await setThrottleLimits(sql, organizationId(values.org), { reads, writes });
        const shown = (limit: number | null, fallback: number) => (limit === null ? `${fallback} (default)` : String(limit));
        print(values.json, limits, [
          `organization ${limits.id}: ${shown(limits.reads, config.throttle.reads)} reads and ` +
            `${shown(limits.writes, config.throttle.writes)} writes per ${config.throttle.windowSeconds} s`,
        ]);
        return;
      }
      case 'version set': {
        const version = parseApiVersion(values.version ?? '');
        if (version === null) throw new UsageError('--version takes v1, v2, v3 or v4');
        const saved = await setApiVersion(sql, organizationId(values.org), version);
        print(values.json, { id: saved.id, apiVersion: formatApiVersion(version) }, [
          `organization ${saved.id}: API version ${formatApiVersion(version)}`,
        ]);
        return;
      }
      case 'webhooks secret show':
      case 'webhooks secret rotate': {
        const org = organizationId(values.org);
        const view = command.endsWith('rotate') ? await rotateSigningSecret(sql, org) : await showSigningSecret(sql, org);
        print(values.json, view, secretLines(view));
        return;
      }
      case 'webhooks basic-auth set': {
        const username = values.username ?? '';
        const password = values.password ?? '';
        // RFC 7617: the user-id of Basic credentials cannot contain a colon.
        if (username === '' || username.includes(':')) throw new UsageError('--username is required and may not contain ":"');
        if (password === '') throw new UsageError('--password is required');
        const org = organizationId(values.org);
        await setBasicCredentials(sql, org, { username, password });
        print(values.json, { organizationId: org, basicAuth: true, username }, [
          `organization ${org}: deliveries carry HTTP Basic credentials for user ${username}`,
        ]);
        return;
      }
      case 'webhooks basic-auth clear': {
        const org = organizationId(values.org);
        await setBasicCredentials(sql, org, null);
        print(values.json, { organizationId: org, basicAuth: false }, [`organization ${org}: deliveries carry no Authorization header`]);
        return;
      }
      case 'network secret create': {
        const network = networkByName(values.network ?? '');
        if (!network) throw new UsageError('--network must name a known network, such as "MTN Uganda" or "Sandbox"');
        const secret = randomBytes(24).toString('hex');
        await sql`insert into network_credentials (network, digest) values (${network.name}, ${digestKey(secret)})
                  on conflict (network) do update set digest = excluded.digest, created = now()`;
        print(values.json, { network: network.name, secret }, [
          `${network.name} callbacks: Authorization: Bearer ${secret}  (shown once; replaces any earlier secret)`,
        ]);
        return;
      }
      case 'network register-urls': {
        const daraja = createConnectors(config, sql).daraja;
        if (!daraja) throw new UsageError('the M-Pesa connector is off: set MPESA_CONSUMER_KEY and the other MPESA_* variables');
        const outcome = await daraja.registerUrls();
        print(values.json, { ...outcome, validationUrl: `${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.validation}`, confirmationUrl: `${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.confirmation}` }, [
          outcome.registered
            ? `Daraja registered ${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.validation} and ${DARAJA_CALLBACK_PATHS.confirmation} for shortcode ${config.mpesa!.shortcode}`
            : `Daraja refused the registration: ${outcome.detail}`,
        ]);
        if (!outcome.registered) process.exitCode = 1;
        return;
      }
      case 'wallet show': {
        const org = organizationId(values.org);
        const { rows } = await listWallets(sql, org, {}, { limit: 1000, offset: 0 });
        const unbalanced = new Set((await walletsOutOfBalance(sql, org)).map((wallet) => wallet.id));
        const wallets = rows.map((row) => ({ ...serializeAccount(row), balanceEqualsTransactions: !unbalanced.has(row.id) }));
        print(values.json, { wallets }, wallets.length === 0 ? [`organization ${org} has no wallet`] : wallets.map((wallet) =>
          `wallet ${wallet.id} ${wallet.currency} ${wallet.status}: balance ${wallet.balance}` +
            (wallet.balanceEqualsTransactions ? ' (= the sum of its transactions)' : ' (DIFFERS from the sum of its transactions)')));
        return;
      }
      case 'wallet transactions': {
        const org = organizationId(values.org);
        const limit = values.limit === undefined ? 50 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UsageError('--limit takes a whole number from 1 to 10000');
        const account = values.account === undefined ? undefined : Number(values.account);
        if (account !== undefined && !Number.isInteger(account)) throw new UsageError('--account takes a wallet id');
        const { count, rows } = await listTransactions(sql, org, { account }, { limit, offset: 0 });
        const transactions = rows.map(serializeLedgerTransaction);
        print(values.json, { count, transactions }, [
          `${count} transaction(s), newest first${count > rows.length ? ` (the ${rows.length} newest shown)` : ''}:`,
          ...transactions.map((transaction) =>
            `${transaction.created} wallet ${transaction.account} ${transaction.amount.padStart(18)} ${transaction.currency} ${transaction.type}: ${transaction.description}`),
        ]);
        return;
      }
      case 'collection reverse': {
        const org = organizationId(values.org);
        if (!/^\d{1,15}$/.test(values.collection ?? '')) throw new UsageError('--collection takes a collection id');
        const client = await connectClient(config.temporal);
        try {
          const launcher = launcherFromConfig(client, config, (message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields)}\n`));
          const reversal = await reverseCollection({ sql, launcher }, { organizationId: org, userId: null }, {
            collection: Number(values.collection), reason: values.reason ?? null,
          }, null).catch((error: unknown) => {
            const refusal = findApiError(error);
            if (refusal) throw new UsageError(Object.values(refusal.body).flat().join(' '));
            throw error;
          });
          print(values.json, reversal, [`reversal ${reversal.id} of collection ${reversal.collection}: ${reversal.amount} ${reversal.currency} back to ${reversal.phonenumber}, ${reversal.state}`]);
        } finally {
          await client.connection.close();
        }
        return;
      }
      case 'sweeps failures': {
        const failures = await listSweepFailures(sql);
        print(values.json, { failures }, failures.length === 0 ? ['no rows set aside'] : failures.map((failure) =>
          `${failure.kind} ${failure.rowId}: ${failure.attempts} failed run(s), last ${failure.lastFailedAt.toISOString()}: ${failure.error}`));
        return;
      }
      case 'sweeps retry': {
        const kind = values.kind ?? '';
        if (!(SWEEP_KINDS as readonly string[]).includes(kind)) throw new UsageError(`--kind takes one of ${SWEEP_KINDS.join(', ')}`);
        if (!/^\d{1,15}$/.test(values.id ?? '')) throw new UsageError('--id takes the row id the failure names');
        const retried = await retrySweepRow(sql, kind as SweepKind, Number(values.id));
        print(values.json, { kind, rowId: Number(values.id), retried }, [
          retried ? `${kind} ${values.id}: back in the sweep; its next run tries it again` : `${kind} ${values.id} was not set aside`,
        ]);
        return;
      }
      default:
        throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) process.stderr.write(`${error.message}\n${USAGE}\n`);
  else process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
});
