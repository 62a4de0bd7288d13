/**
 * A merchant's daily settlement report (reconciliation): its own movements of money with the mobile
 * networks on one UTC day, with their totals per network and currency, as JSON and CSV.
 */
import { Elysia } from 'elysia';
import {
  SETTLEMENT_CSV_COLUMNS,
  SettlementSchema,
  serializeSettlement,
  settlementCsv,
  settlementFileName,
} from '../domain/settlements';
import { SETTLEMENT_MAX_LINES, SettlementQuery, settlementReport } from '../services/wallets/settlements';
import { authPlugin } from '../http/auth';
import type { AppDeps } from '../http/context';
import { csvResponse } from '../http/request';
import { requestSchema, routeDocs } from '../http/route-docs';

const DAY_RULE = [
  'A movement is on the UTC day in which it became final:',
  'a collection when its wallet was credited, a payment or a reversal when the network completed it.',
  'Failed, rejected and cancelled ones moved no money and are not listed.',
].join(' ');

/** The CSV of the OpenAPI document's example: one collection, then the totals of its network and currency. */
const CSV_EXAMPLE = [
  SETTLEMENT_CSV_COLUMNS.join(','),
  'MTN Uganda,UGX,collection,812,42,8871245531,req-77-0,,momo,5000.0000,,+256772123456,2025-05-01T09:12:44.120Z,',
  'MTN Uganda,UGX,total_in,,,,,,,5000.0000,,,,1',
  'MTN Uganda,UGX,total_out,,,,,,,0.0000,,,,0',
  'MTN Uganda,UGX,total_reversed,,,,,,,0.0000,,,,0',
  'MTN Uganda,UGX,net,,,,,,,5000.0000,,,,',
  '',
].join('\n');

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  getSettlement: routeDocs({
    operationId: 'getSettlement',
    summary: 'The daily settlement report',
    description: [
      "Every movement of the organization's money with a mobile network on one UTC day (default: today, so far):",
      "collections in, payments and reversals out, each with the operator's transaction id,",
      'and the totals per network and currency (exact sums).',
      DAY_RULE,
      "`fee` is null: the operators' API results report no fee per transaction.",
      `At most ${SETTLEMENT_MAX_LINES} lines (400 otherwise: filter by network or currency).`,
    ].join(' '),
    tags: ['Settlements'],
    caller: 'merchant',
    responses: { 200: { description: 'The report.', schema: SettlementSchema } },
  }),
  getSettlementCsv: routeDocs({
    operationId: 'getSettlementCsv',
    summary: 'The daily settlement report, as CSV',
    description: [
      'The report of `getSettlement` as CSV: a line per movement with the same fields,',
      'then per network and currency a `total_in`, `total_out` and `total_reversed` line',
      '(the sum in `amount`, the number in `count`) and a `net` line.',
    ].join(' '),
    tags: ['Settlements'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'The report as CSV.',
        mediaType: 'text/csv',
        example: CSV_EXAMPLE,
      },
    },
  }),
};

export const settlementRoutes = ({ sql }: AppDeps) =>
  new Elysia({ name: 'settlements', prefix: '/api' })
    .use(authPlugin(sql))
    .get(
      '/settlements',
      async ({ query, principal }) =>
        serializeSettlement(await settlementReport(sql, { organizationId: principal.organizationId }, query)),
      { can: 'reconcile', query: requestSchema(SettlementQuery), ...DOCS.getSettlement },
    )
    .get(
      '/settlements.csv',
      async ({ query, principal }) => {
        const settlement = await settlementReport(sql, { organizationId: principal.organizationId }, query);
        return csvResponse(settlementCsv(settlement), settlementFileName(settlement));
      },
      { can: 'reconcile', query: requestSchema(SettlementQuery), ...DOCS.getSettlementCsv },
    );
