/**
 * The overview: wallets, today's requests, the last 14 days of collections received and payments sent, recent failures.
 */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { REQUEST_STATUSES } from '../../domain/collection-requests';
import {
  collectionsByDay,
  paymentsSentByDay,
  recentFailures,
  requestCountsByStatus,
  walletBalances,
  type DailyMoney,
} from '../../services/wallets/overview';
import { html, type Html } from '../html';
import { htmlResponse } from '../http';
import { badge, layout, money, sectionFrame, table, when } from '../layout';
import { disabledWebhooks } from '../../services/webhooks/webhook-recovery';
import { consoleSessionPlugin } from '../session';
import { disabledWebhooksNotice } from './common';

const CHART_DAYS = 14;
const DAY_MS = 86_400_000;

const startOfUtcDay = (date: Date): Date => new Date(Math.floor(date.getTime() / DAY_MS) * DAY_MS);

/** `days` as one entry for each of the 14 days from `firstDay` (zero where there were none). */
function everyDay(days: readonly DailyMoney[], firstDay: Date): DailyMoney[] {
  const byDay = new Map(days.map((day) => [day.day, day]));
  return Array.from({ length: CHART_DAYS }, (_, index) => {
    const day = new Date(firstDay.getTime() + index * DAY_MS).toISOString().slice(0, 10);
    return byDay.get(day) ?? { day, count: 0, totals: [] };
  });
}

const totalsText = (day: DailyMoney) => day.totals.map((total) => money(total.amount, total.currency)).join(', ');
const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/**
 * The last 14 days' collections received and payments sent as one bar chart (inline SVG drawn
 * here; two bars a day on one scale of counts), with the same numbers in a table.
 */
function moneyChart(received: readonly DailyMoney[], sent: readonly DailyMoney[], firstDay: Date): Html {
  const sentEveryDay = everyDay(sent, firstDay);
  const series = everyDay(received, firstDay).map((day, index) => ({ received: day, sent: sentEveryDay[index]! }));
  const highest = Math.max(1, ...series.flatMap((day) => [day.received.count, day.sent.count]));
  const [width, height, top, bottom] = [700, 170, 16, 24];
  const slot = width / CHART_DAYS;
  const barWidth = Math.round(slot * 0.34);
  const scale = (height - top - bottom) / highest;
  const bar = (kind: 'received' | 'sent', day: DailyMoney, x: number) => {
    const barHeight = Math.round(day.count * scale);
    const y = height - bottom - barHeight;
    const what =
      kind === 'received' ? plural(day.count, 'collection') + ' received' : plural(day.count, 'payment') + ' sent';
    return html`<g><title>${day.day}: ${what}${day.totals.length ? ` (${totalsText(day)})` : ''}</title>
<rect class="bar ${kind}" x="${x}" y="${y}" width="${barWidth}" height="${barHeight}"></rect>
${day.count > 0 ? html`<text x="${x + barWidth / 2}" y="${y - 4}" text-anchor="middle">${day.count}</text>` : ''}</g>`;
  };
  const bars = series.map((day, index) => {
    const left = Math.round(index * slot + slot / 2 - barWidth - 1);
    return html`${bar('received', day.received, left)}${bar('sent', day.sent, left + barWidth + 2)}
<text x="${Math.round(index * slot + slot / 2)}" y="${height - 8}" \
text-anchor="middle">${day.received.day.slice(8)}</text>`;
  });
  const first = series[0]!.received.day;
  const last = series.at(-1)!.received.day;
  return html`<div class="chart"><svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title">
<title id="chart-title">Collections received and payments sent per day, ${first} to ${last} (UTC)</title>
<line class="axis" x1="0" x2="${width}" y1="${height - bottom}" y2="${height - bottom}"></line>${bars}</svg>
<p class="legend"><span class="swatch received"></span> Collections received <span class="swatch \
sent"></span> Payments \
sent (completed)</p></div>
<details><summary>The numbers</summary>${table(
    ['Day (UTC)', 'Collections', 'Received', 'Payments', 'Sent'],
    series
      .filter((day) => day.received.count > 0 || day.sent.count > 0)
      .map((day) => [
        day.received.day,
        day.received.count,
        totalsText(day.received),
        day.sent.count,
        totalsText(day.sent),
      ]),
    'No collections and no payments in these 14 days.',
  )}</details>`;
}

export const overviewRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'overview');
  return new Elysia({ name: 'console-overview' }).use(consoleSessionPlugin(deps)).get(
    '/console',
    async ({ session }) => {
      const today = startOfUtcDay(new Date());
      const firstDay = new Date(today.getTime() - (CHART_DAYS - 1) * DAY_MS);
      const [wallets, counts, received, sent, failures, disabled] = await Promise.all([
        walletBalances(sql, session.organizationId),
        requestCountsByStatus(sql, session.organizationId, today),
        collectionsByDay(sql, session.organizationId, firstDay),
        paymentsSentByDay(sql, session.organizationId, firstDay),
        recentFailures(sql, session.organizationId),
        disabledWebhooks(sql, session.organizationId),
      ]);
      const countOf = new Map(counts.map((row) => [row.status, row.count]));
      const todaysTotal = counts.reduce((sum, row) => sum + row.count, 0);
      const content = html`${disabledWebhooksNotice(disabled)}
<section class="card" aria-labelledby="wallets"><h2 id="wallets">Wallets</h2>
${table(
  ['Wallet', 'Currency', 'Balance', 'Status'],
  wallets.map((wallet) => [
    html`<a href="/console/wallets/${wallet.id}">${wallet.label}</a>`,
    wallet.currency,
    html`<span class="stat">${money(wallet.balance, wallet.currency)}</span>`,
    badge(wallet.status),
  ]),
  'No wallet yet.',
)}</section>
<section class="card" aria-labelledby="today"><h2 id="today">Today's collection requests <span \
class="muted">(${todaysTotal}, UTC day)</span></h2>
${table(
  ['Status', 'Requests'],
  REQUEST_STATUSES.filter((status) => countOf.has(status)).map((status) => [
    html`<a \
href="/console/requests?status=${status}&amp;created_after=${today.toISOString().slice(0, 10)}">${badge(status)}</a>`,
    countOf.get(status)!,
  ]),
  'No requests created today.',
)}</section>
<section class="card" aria-labelledby="days"><h2 id="days">Collections received and payments sent, last 14 days</h2>
${moneyChart(received, sent, firstDay)}
<p class="muted">${plural(
        received.reduce((sum, day) => sum + day.count, 0),
        'collection',
      )} received,
${plural(
  sent.reduce((sum, day) => sum + day.count, 0),
  'payment',
)} sent. <a href="/console/collections">Collections</a> · <a href="/console/payments">Payments</a></p></section>
<section class="card" aria-labelledby="failures"><h2 id="failures">Recent failures</h2>
<h3>Failed collection requests</h3>
${table(
  ['Request', 'Number', 'Amount', 'Error', 'When'],
  failures.requests.map((request) => [
    html`<a href="/console/requests/${request.id}">#${request.id}</a>`,
    request.phoneNumber,
    money(request.amount, request.currency),
    request.errorMessage ?? '',
    when(request.modified),
  ]),
  'No failed requests.',
)}
<h3>Failing webhook deliveries</h3>
<p class="muted">Exhausted: all 10 attempts failed; deliver it again from its webhook's page. Retrying: its last \
attempt \
failed, the next is scheduled.</p>
${table(
  ['Delivery', 'Event', 'Target', 'Last answer', 'When', 'Status'],
  failures.deliveries.map((delivery) => [
    html`<a href="/console/webhooks/${delivery.webhookId}#delivery-${delivery.id}">#${delivery.id}</a>`,
    html`<a href="/console/events/${delivery.eventId}">${delivery.eventType} #${delivery.eventId}</a>`,
    delivery.target,
    delivery.lastStatusCode ?? delivery.lastError ?? '',
    when(delivery.lastAttemptAt),
    badge(delivery.status === 'failed' ? 'exhausted' : 'retrying'),
  ]),
  'No failing deliveries.',
)}
</section>`;
      return htmlResponse(layout(frame(session, 'Overview'), content));
    },
    { page: 'view' },
  );
};
