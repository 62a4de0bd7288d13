/** Wallets (funding, balances checked against their transactions, transactions) and reversals of collections. */
import { asId } from '../domain/ids';
import {
  MAX_FUNDING_AMOUNT,
  SUPPORTED_CURRENCIES,
  groupedAmount,
  isCurrency,
  parsePositiveAmount,
} from '../domain/money';
import { serializeAccount, serializeLedgerTransaction } from '../domain/money-out';
import { findApiError } from '../http/errors';
import { fundWallet } from '../services/merchants/organizations';
import { reverseCollection } from '../services/payments/reversals';
import { listTransactions, listWallets, walletsOutOfBalance } from '../services/wallets/wallets';
import { connectClient } from '../temporal/connection';
import { launcherFromConfig } from '../temporal/launcher';
import { UsageError, organizationId, print, rowId, type Command } from './cli';

export const moneyCommands: Record<string, Command> = {
  'wallet fund': {
    usage: `wallet fund --org ID --currency ${SUPPORTED_CURRENCIES.join('|')} --amount AMOUNT [--json]`,
    async run({ sql, values }) {
      const currency = values.currency?.toUpperCase() ?? '';
      if (!isCurrency(currency)) throw new UsageError(`--currency must be one of ${SUPPORTED_CURRENCIES.join(', ')}`);
      const amount = parsePositiveAmount(values.amount ?? '', MAX_FUNDING_AMOUNT);
      if (amount === null)
        throw new UsageError(
          `--amount must be a positive decimal with at most 4 decimals, at most ${groupedAmount(MAX_FUNDING_AMOUNT)}`,
        );
      const funding = await fundWallet(sql, organizationId(values.org), currency, amount);
      print(values.json, funding, [`wallet ${funding.accountId} balance ${funding.balance} ${currency}`]);
    },
  },
  'wallet show': {
    usage: 'wallet show --org ID [--json]',
    async run({ sql, values }) {
      const org = organizationId(values.org);
      const { rows } = await listWallets(sql, org, {}, { limit: 1000, offset: 0 });
      const unbalanced = new Set((await walletsOutOfBalance(sql, org)).map((wallet) => wallet.id));
      const wallets = rows.map((row) => ({
        ...serializeAccount(row),
        balanceEqualsTransactions: !unbalanced.has(row.id),
      }));
      print(
        values.json,
        { wallets },
        wallets.length === 0
          ? [`organization ${org} has no wallet`]
          : wallets.map((wallet) =>
              [
                `wallet ${wallet.id} ${wallet.currency} ${wallet.status}: balance ${wallet.balance}`,
                wallet.balanceEqualsTransactions
                  ? '(= the sum of its transactions)'
                  : '(DIFFERS from the sum of its transactions)',
              ].join(' '),
            ),
      );
    },
  },
  'wallet transactions': {
    usage: 'wallet transactions --org ID [--account ID] [--limit N] [--json]',
    async run({ sql, values }) {
      const org = organizationId(values.org);
      const limit = values.limit === undefined ? 50 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
        throw new UsageError('--limit takes a whole number from 1 to 10000');
      const account = values.account === undefined ? undefined : rowId(values.account, '--account takes a wallet id');
      const { count, rows } = await listTransactions(sql, org, { account }, { limit, offset: 0 });
      const transactions = rows.map(serializeLedgerTransaction);
      print(values.json, { count, transactions }, [
        `${count} transaction(s), newest first${count > rows.length ? ` (the ${rows.length} newest shown)` : ''}:`,
        ...transactions.map((transaction) =>
          [
            `${transaction.created} wallet ${transaction.account} ${transaction.amount.padStart(18)}`,
            `${transaction.currency} ${transaction.type}: ${transaction.description}`,
          ].join(' '),
        ),
      ]);
    },
  },
  'collection reverse': {
    usage: 'collection reverse --org ID --collection ID [--reason TEXT] [--json]',
    async run({ sql, values, config }) {
      const org = organizationId(values.org);
      const collection = rowId(values.collection, '--collection takes a collection id');
      const client = await connectClient(config.temporal);
      try {
        const launcher = launcherFromConfig(client, config, (message, fields) =>
          process.stderr.write(`${message} ${JSON.stringify(fields)}\n`),
        );
        const reversal = await reverseCollection(
          { sql, launcher },
          { organizationId: org, userId: null },
          { collection: asId('Collection', collection), reason: values.reason ?? null },
          null,
        ).catch((error: unknown) => {
          const refusal = findApiError(error);
          if (refusal) throw new UsageError(Object.values(refusal.body).flat().join(' '));
          throw error;
        });
        print(values.json, reversal, [
          [
            `reversal ${reversal.id} of collection ${reversal.collection}: ${reversal.amount} ${reversal.currency}`,
            `back to ${reversal.phonenumber}, ${reversal.state}`,
          ].join(' '),
        ]);
      } finally {
        await client.connection.close();
      }
    },
  },
};
