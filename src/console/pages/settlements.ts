/**
 * Settlement: the organization's daily settlement report (the same `settlementReport` as
 * `GET /api/settlements`) for a UTC day, with its totals per network and currency, every movement
 * with the operator's transaction id, and its CSV.
 */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { parseFilters } from '../../http/filters';
import { findApiError } from '../../http/errors';
import { csvResponse } from '../../http/request';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import { knownNetworks } from '../../domain/networks';
import { MONEY_MOVEMENTS, movementPage } from '../../domain/money-movements';
import {
  SETTLEMENT_TOTALS,
  settlementCsv,
  settlementFileName,
  settlementTotals,
  type Settlement,
} from '../../domain/settlements';
import { SettlementQuery, settlementReport } from '../../services/wallets/settlements';
import { html, type Html } from '../html';
import { htmlResponse } from '../http';
import {
  details,
  input,
  layout,
  money,
  notice,
  queryValues,
  sectionFrame,
  select,
  signedMoney,
  table,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { consoleSessionPlugin } from '../session';
import { nonEmptyQuery } from './common';

/** The day and filters of a report (GET), with the errors of a refused one. */
const settlementForm = (
  values: Values,
  errors: FieldErrors,
): Html => html`<form method="get" action="/console/settlements" class="grid">
${input('date', 'Day', values, errors, { placeholder: 'YYYY-MM-DD', hint: 'UTC. Empty: today, so far.' })}
${select(
  'network',
  'Network',
  knownNetworks().map((network) => [network.name, network.name] as const),
  values,
  errors,
  true,
)}
${select(
  'currency',
  'Currency',
  SUPPORTED_CURRENCIES.map((code) => [code, code] as const),
  values,
  errors,
  true,
)}
<div class="actions"><button type="submit">Show settlement</button></div></form>`;

function report(settlement: Settlement, searchParams: URLSearchParams): Html {
  return html`<p><a href="/console/settlements.csv?${searchParams.toString()}" download>Download as CSV</a></p>
<section class="card">${details([
    ['Day (UTC)', html`${when(settlement.since)} to ${when(settlement.until)}`],
    ['Read at', when(settlement.asOf)],
  ])}</section>
<h2 id="totals">Totals</h2>
${table(
  ['Network', 'Currency', ...SETTLEMENT_TOTALS.map((name) => `${name[0]!.toUpperCase()}${name.slice(1)}`), 'Net'],
  settlementTotals(settlement.lines).map((total) => [
    total.network,
    total.currency,
    ...SETTLEMENT_TOTALS.map((name) => `${total[name].count} · ${money(total[name].amount, total.currency)}`),
    html`<strong>${signedMoney(total.net, total.currency)}</strong>`,
  ]),
  'No money moved with a network on this day.',
)}
<h2 id="lines">Movements</h2>
${table(
  ['Final at', 'Network', 'Type', 'Ours', "Operator's id", 'Phone number', 'Amount', 'Fee'],
  settlement.lines.map((line) => [
    when(line.finalAt),
    line.network,
    line.type,
    html`<a href="${movementPage(line.type, line.id)}">${line.type} #${line.id}</a>`,
    line.operatorTransactionId ?? html`<span class="muted">—</span>`,
    line.phoneNumber,
    signedMoney(
      MONEY_MOVEMENTS[line.type].settlement.direction === 'in' ? line.amount : `-${line.amount}`,
      line.currency,
    ),
    html`<span class="muted">not reported</span>`,
  ]),
  'No movements.',
)}
<p class="muted">A movement is on the day it became final: a collection when its wallet was credited, a payment or a \
reversal when the network \
completed it. The networks' API results report no fee per transaction; their statements' charges are reconciled by the \
operator.</p>`;
}

export const settlementRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'settlements');

  return new Elysia({ name: 'console-settlements' })
    .use(consoleSessionPlugin(deps))
    .get(
      '/console/settlements',
      async ({ request, session }) => {
        const searchParams = nonEmptyQuery(request);
        const values = queryValues(searchParams);
        try {
          const settlement = await settlementReport(
            sql,
            { organizationId: session.organizationId },
            parseFilters(SettlementQuery, searchParams),
          );
          return htmlResponse(
            layout(
              frame(session, 'Settlement'),
              html`${settlementForm(values, {})}${report(settlement, searchParams)}`,
            ),
          );
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          const errors = apiError.body as FieldErrors;
          return htmlResponse(
            layout(
              frame(session, 'Settlement'),
              html`${notice(Object.values(errors).flat().join(' '), 'error')}${settlementForm(values, errors)}`,
            ),
            400,
          );
        }
      },
      { page: 'reconcile' },
    )
    .get(
      '/console/settlements.csv',
      async ({ request, session }) => {
        const settlement = await settlementReport(
          sql,
          { organizationId: session.organizationId },
          parseFilters(SettlementQuery, nonEmptyQuery(request)),
        );
        return csvResponse(settlementCsv(settlement), settlementFileName(settlement));
      },
      { page: 'reconcile' },
    );
};
