/** The overview: wallets, today's requests, the last 14 days of collections (and payments), recent failures. */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../api/context';
import { REQUEST_STATUSES } from '../../domain/collection-requests';
import {
  collectionsByDay, paymentsSentSince, recentFailures, requestCountsByStatus, walletBalances, type DailyCollections,
} from '../../services/overview';
import { html, type Html } from '../html';
import { htmlResponse } from '../http';
import { badge, layout, money, table, when } from '../layout';
import { consoleSessionPlugin } from '../session';

const CHART_DAYS = 14;
const DAY_MS = 86_400_000;

const startOfUtcDay = (date: Date): Date => new Date(Math.floor(date.getTime() / DAY_MS) * DAY_MS);

/** The last 14 days' collections as a bar chart (inline SVG, drawn here) with the same numbers in a table. */
function collectionsChart(days: DailyCollections[], firstDay: Date): Html {
  const byDay = new Map(days.map((day) => [day.day, day]));
  const series = Array.from({ length: CHART_DAYS }, (_, index) => {
    const day = new Date(firstDay.getTime() + index * DAY_MS).toISOString().slice(0, 10);
    return byDay.get(day) ?? { day, count: 0, totals: [] };
  });
  const highest = Math.max(1, ...series.map((day) => day.count));
  const [width, height, top, bottom] = [700, 170, 16, 24];
  const slot = width / CHART_DAYS;
  const scale = (height - top - bottom) / highest;
  const totalsText = (day: DailyCollections) => day.totals.map((total) => money(total.amount, total.currency)).join(', ');
  const bars = series.map((day, index) => {
    const barHeight = Math.round(day.count * scale);
    const x = Math.round(index * slot + slot * 0.2);
    const y = height - bottom - barHeight;
    return html`<g><title>${day.day}: ${day.count} collection${day.count === 1 ? '' : 's'}${day.totals.length ? ` (${totalsText(day)})` : ''}</title>
<rect class="bar" x="${x}" y="${y}" width="${Math.round(slot * 0.6)}" height="${barHeight}"></rect>
<text x="${Math.round(index * slot + slot / 2)}" y="${height - 8}" text-anchor="middle">${day.day.slice(8)}</text>
${day.count > 0 ? html`<text x="${Math.round(index * slot + slot / 2)}" y="${y - 4}" text-anchor="middle">${day.count}</text>` : ''}</g>`;
  });
  return html`<div class="chart"><svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title">
<title id="chart-title">Collections received per day, ${series[0]!.day} to ${series.at(-1)!.day} (UTC)</title>
<line class="axis" x1="0" x2="${width}" y1="${height - bottom}" y2="${height - bottom}"></line>${bars}</svg></div>
<details><summary>The numbers</summary>${table(['Day (UTC)', 'Collections', 'Received'],
    series.filter((day) => day.count > 0).map((day) => [day.day, day.count, totalsText(day)]), 'No collections in these 14 days.')}</details>`;
}

export const overviewRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  return new Elysia({ name: 'console-overview' })
    .use(consoleSessionPlugin(deps))
    .get('/console', async ({ session }) => {
      const today = startOfUtcDay(new Date());
      const firstDay = new Date(today.getTime() - (CHART_DAYS - 1) * DAY_MS);
      const [wallets, counts, days, payments, failures] = await Promise.all([
        walletBalances(sql, session.organizationId),
        requestCountsByStatus(sql, session.organizationId, today),
        collectionsByDay(sql, session.organizationId, firstDay),
        paymentsSentSince(sql, session.organizationId, firstDay),
        recentFailures(sql, session.organizationId),
      ]);
      const countOf = new Map(counts.map((row) => [row.status, row.count]));
      const todaysTotal = counts.reduce((sum, row) => sum + row.count, 0);
      const content = html`
<section class="card" aria-labelledby="wallets"><h2 id="wallets">Wallets</h2>
${table(['Wallet', 'Currency', 'Balance', 'Status'], wallets.map((wallet) => [
    wallet.label, wallet.currency, html`<span class="stat">${money(wallet.balance, wallet.currency)}</span>`, badge(wallet.status),
  ]), 'No wallet yet.')}</section>
<section class="card" aria-labelledby="today"><h2 id="today">Today's collection requests <span class="muted">(${todaysTotal}, UTC day)</span></h2>
${table(['Status', 'Requests'], REQUEST_STATUSES.filter((status) => countOf.has(status)).map((status) => [
    html`<a href="/console/requests?status=${status}&amp;created_after=${today.toISOString().slice(0, 10)}">${badge(status)}</a>`, countOf.get(status)!,
  ]), 'No requests created today.')}</section>
<div class="cards">
<section class="card" aria-labelledby="received"><h2 id="received">Collections received, last 14 days</h2>${collectionsChart(days, firstDay)}</section>
<section class="card" aria-labelledby="sent"><h2 id="sent">Payments sent, last 14 days</h2>
${payments === null
    ? html`<p class="empty">No payments yet: sending money (payments) is not part of this service yet.</p>`
    : payments.count === 0 ? html`<p class="empty">No payments yet.</p>` : html`<p class="stat">${payments.count}</p>`}
</section></div>
<section class="card" aria-labelledby="failures"><h2 id="failures">Recent failures</h2>
<h3>Failed collection requests</h3>
${table(['Request', 'Number', 'Amount', 'Error', 'When'], failures.requests.map((request) => [
    html`<a href="/console/requests/${request.id}">#${request.id}</a>`, request.phoneNumber, money(request.amount, request.currency),
    request.errorMessage ?? '', when(request.modified),
  ]), 'No failed requests.')}
<h3>Failing webhook deliveries</h3>
${table(['Delivery', 'Event', 'Target', 'Last answer', 'When', 'Status'], failures.deliveries.map((delivery) => [
    html`<a href="/console/webhooks/${delivery.webhookId}">#${delivery.id}</a>`, html`<a href="/console/events/${delivery.eventId}">${delivery.eventType} #${delivery.eventId}</a>`,
    delivery.target, delivery.lastStatusCode ?? delivery.lastError ?? '', when(delivery.lastAttemptAt), badge(delivery.status),
  ]), 'No failing deliveries.')}
</section>`;
      return htmlResponse(layout({ session, sandbox: config.sandbox, section: 'overview', title: 'Overview' }, content));
    }, { page: 'member' });
};
