/**
 * Bulk payouts in the console: the list of batches with their progress, the upload of a CSV with a
 * preview that checks every row (`checkPaymentBatch`, the API's rules) and shows each row's error
 * and each wallet's funding before anything is sent, the confirmation that creates the batch
 * (`createPaymentBatch`, as POST /api/payment-batches, with a key against a second submit), and a
 * batch's page: a progress bar that updates by itself, its rows, and the result CSV.
 */
import { randomUUID } from 'node:crypto';
import { Elysia } from 'elysia';
import { validate } from '../../domain/input';
import {
  BATCH_CSV_COLUMNS,
  MAX_BATCH_ROWS,
  batchResultsCsv,
  finalRows,
  readBatchCsv,
  type PaymentBatchResource,
} from '../../domain/payment-batches';
import type { AppDeps } from '../../http/context';
import { findApiError } from '../../http/errors';
import { parsePage } from '../../http/pagination';
import { MAX_BODY_BYTES, csvResponse, declareBodyOptions } from '../../http/request';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { DuplicateRequestError } from '../../services/collections/duplicate-checks';
import {
  PaymentBatchCreate,
  checkPaymentBatch,
  createPaymentBatch,
  type BatchCheck,
} from '../../services/payments/payment-batch-creation';
import {
  batchLines,
  findOwnPaymentBatch,
  listPaymentBatches,
  paymentBatchResources,
} from '../../services/payments/payment-batch-reads';
import { paymentBatchWorkflowId } from '../../contracts/payment-batch';
import { html, type Html } from '../html';
import { htmlResponse, redirect } from '../http';
import { badge, details, layout, money, notice, pager, postForm, sectionFrame, table, when } from '../layout';
import { listPage } from '../list-page';
import { allows, consoleSessionPlugin } from '../session';
import { nonEmptyQuery, ownedId, ownedOrMissing, workflowUrl } from './common';

const UPLOAD_LIMIT = 16 * MAX_BODY_BYTES;
declareBodyOptions('POST', '/console/payment-batches/preview', { limit: UPLOAD_LIMIT, files: ['file'] });
declareBodyOptions('POST', '/console/payment-batches', { limit: UPLOAD_LIMIT });

/** Rows a preview lists in full; errors are all listed (up to this many too). */
const PREVIEW_ROWS = 50;
const ROWS_PER_PAGE = 50;

/** A batch's progress: a bar of its final rows, and its rows counted by state. */
function progress(batch: PaymentBatchResource): Html {
  const done = finalRows(batch);
  const counts = Object.entries(batch.counts).filter(([, count]) => count > 0);
  return html`<progress max="${batch.row_count}" value="${done}" \
aria-label="Rows final"></progress> ${done} of ${batch.row_count} final
<span class="batch-counts">${counts.map(([state, count]) => html` ${badge(state)} ${count}`)}</span>`;
}

const totals = (batch: PaymentBatchResource): string =>
  batch.totals
    .map(
      (total) => `${money(total.amount, total.currency)} (${money(total.completed_amount, total.currency)} completed)`,
    )
    .join(', ');

function uploadForm(session: ConsoleSession, error?: string): Html {
  return html`${error ? notice(error, 'error') : ''}
<section class="card"><p>A CSV file whose first line names its columns, one payment per line after it (at \
most ${MAX_BATCH_ROWS}). The columns are
<code>${BATCH_CSV_COLUMNS.join(', ')}</code>; <code>phonenumber</code>, <code>amount</code>, <code>currency</code> \
and <code>description</code> are required. \
Every row is checked before anything is sent: you see the preview first.</p>
<pre>phonenumber,amount,currency,description
+256772123456,15000,UGX,Salary May</pre>
<form method="post" action="/console/payment-batches/preview" enctype="multipart/form-data" class="stack">
<input type="hidden" name="_csrf" value="${session.csrfToken}">
<div class="field"><label for="field-file">CSV file</label><input id="field-file" name="file" type="file" \
accept=".csv,text/csv" required></div>
<div class="actions"><button type="submit" class="primary">Preview</button></div></form></section>`;
}

/**
 * What the preview shows: each wallet's funding, every row's errors, the first rows, and the button that sends them
 * when all is well.
 */
function previewContent(
  session: ConsoleSession,
  csv: string,
  rows: readonly Record<string, string>[],
  checked: BatchCheck,
): Html {
  const invalid = checked.lines.flatMap((line, index) =>
    line.fields === null ? [{ index, errors: line.errors }] : [],
  );
  const short = checked.funding.filter((wallet) => !wallet.enough);
  const ready = invalid.length === 0 && short.length === 0;
  const rowCells = (index: number): Html[] => {
    const row = rows[index]!;
    return [
      html`${index + 1}`,
      html`${row.phonenumber ?? ''}`,
      html`${row.amount ?? ''} ${row.currency ?? ''}`,
      html`${row.description ?? ''}`,
    ];
  };
  return html`${
    ready
      ? notice(html`<strong>${rows.length} payments ready.</strong> Nothing has been sent yet.`, 'info')
      : notice(
          html`<strong>This batch cannot be sent as it is</strong>: ${invalid.length} rows with \
errors${short.length > 0 ? ', and wallets that do not hold what their rows add up to' : ''}. Nothing has been sent; \
correct the file and upload it again.`,
          'error',
        )
  }
<h2>Wallets</h2>
${table(
  ['Wallet', 'Rows', 'Rows add up to', 'Wallet holds', ''],
  checked.funding.map((wallet) => [
    html`<a href="/console/wallets/${wallet.accountId}">#${wallet.accountId}</a>`,
    html`${wallet.rows}`,
    money(wallet.amount, wallet.currency),
    money(wallet.balance, wallet.currency),
    wallet.enough ? badge('enough') : html`<span class="badge status-failed">insufficient funds</span>`,
  ]),
  'No row names a wallet it can be paid from.',
)}
${
  invalid.length > 0
    ? html`<h2>Rows with errors</h2>
${table(
  ['Row', 'Phone number', 'Amount', 'Description', 'Errors'],
  invalid
    .slice(0, PREVIEW_ROWS)
    .map(({ index, errors }) => [
      ...rowCells(index),
      html`<ul class="row-errors">${Object.entries(errors).map(
        ([field, messages]) => html`<li>${field}: ${messages.join(' ')}</li>`,
      )}</ul>`,
    ]),
  '',
)}${
  invalid.length > PREVIEW_ROWS
    ? html`<p class="muted">And ${invalid.length - PREVIEW_ROWS} more rows with \
errors.</p>`
    : ''
}`
    : ''
}
<h2>First rows</h2>
${table(
  ['Row', 'Phone number', 'Amount', 'Description'],
  rows.slice(0, PREVIEW_ROWS).map((_row, index) => rowCells(index)),
  '',
)}
${
  ready
    ? postForm(
        session,
        '/console/payment-batches',
        html`<input type="hidden" name="key" value="${randomUUID()}">
<textarea name="csv" hidden>${csv}</textarea>
<div class="actions"><button type="submit" class="primary">Send ${rows.length} payments</button> <a \
href="/console/payment-batches/new">Upload another file</a></div>`,
      )
    : html`<p><a href="/console/payment-batches/new">Upload a corrected file</a></p>`
}`;
}

export const paymentBatchRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'payments');
  const ownedBatch = (session: ConsoleSession, rawId: string) =>
    ownedOrMissing(
      findOwnPaymentBatch(sql, session.organizationId, ownedId(rawId, 'PaymentBatch')),
      'No such payment batch in your organization.',
    );
  const resourceOf = async (session: ConsoleSession, rawId: string) =>
    (await paymentBatchResources(sql, [await ownedBatch(session, rawId)]))[0]!;

  const live = (batch: PaymentBatchResource): Html => html`<div${batch.state === 'completed' ? html` data-final` : ''}>
<p>State: <strong \
id="batch-state">${badge(batch.state)}</strong>${
    batch.state === 'completed'
      ? ''
      : html` <span \
class="muted">(updates by itself)</span>`
  }</p>
<p class="batch-progress">${progress(batch)}</p><p>Totals: ${totals(batch)}</p></div>`;

  const batchList = listPage(config, {
    path: '/console/payment-batches',
    section: 'payments',
    title: 'Payment batches',
    page: async (session, _filters, page) => {
      const { count, rows } = await listPaymentBatches(sql, session.organizationId, {}, page);
      return { count, rows: await paymentBatchResources(sql, rows) };
    },
    columns: [
      ['Batch', (batch) => html`<a href="/console/payment-batches/${batch.id}">#${batch.id}</a>`],
      ['Created', (batch) => when(new Date(batch.created))],
      ['Rows', (batch) => html`${batch.row_count}`],
      ['Progress', progress],
      ['State', (batch) => badge(batch.state)],
    ],
    empty: 'No payment batches yet.',
    above: ({ session }) =>
      html`<p>${
        allows(session, 'pay') ? html`<a href="/console/payment-batches/new">Upload a batch</a> · ` : ''
      }<a href="/console/payments">Payments</a></p>`,
  });

  return new Elysia({ name: 'console-payment-batches' })
    .use(consoleSessionPlugin(deps))
    .get('/console/payment-batches', ({ request, session }) => batchList({ request, session }), { page: 'view' })
    .get(
      '/console/payment-batches/new',
      ({ session }) => htmlResponse(layout(frame(session, 'Upload a payment batch'), uploadForm(session))),
      { page: 'pay' },
    )
    .post(
      '/console/payment-batches/preview',
      async ({ session, form }) => {
        const csv = typeof form.file === 'string' ? form.file : '';
        let rows: Record<string, string>[];
        try {
          rows = readBatchCsv(csv);
        } catch (error) {
          return htmlResponse(
            layout(frame(session, 'Upload a payment batch'), uploadForm(session, (error as Error).message)),
            400,
          );
        }
        if (rows.length === 0 || rows.length > MAX_BATCH_ROWS) {
          const problem =
            rows.length === 0
              ? 'The file holds no payment: one per line after the line of column names.'
              : `The file holds ${rows.length} payments; a batch holds at most ${MAX_BATCH_ROWS}.`;
          return htmlResponse(layout(frame(session, 'Upload a payment batch'), uploadForm(session, problem)), 400);
        }
        const checked = await checkPaymentBatch(deps, session.organizationId, rows);
        return htmlResponse(
          layout(frame(session, 'Preview of the batch'), previewContent(session, csv, rows, checked)),
        );
      },
      { action: 'pay', parse: 'none' },
    )
    .post(
      '/console/payment-batches',
      async ({ session, form }) => {
        const key = typeof form.key === 'string' ? form.key : randomUUID();
        const duplicateCheck = {
          organizationId: session.organizationId,
          key: `console-batch-${key}`,
          method: 'POST',
          path: '/console/payment-batches',
          ttlSeconds: config.duplicateCheckTtlSeconds,
        };
        try {
          const input = validate(PaymentBatchCreate, {
            payments: readBatchCsv(typeof form.csv === 'string' ? form.csv : ''),
          });
          const batch = await createPaymentBatch(deps, session, input, duplicateCheck);
          return redirect(`/console/payment-batches/${batch.id}`);
        } catch (error) {
          // A second submit of the same preview: the first one's batch is on the list.
          if (error instanceof DuplicateRequestError) return redirect('/console/payment-batches');
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          // The wallet changed since the preview (or the form was altered): say why, nothing was sent.
          const reason =
            typeof apiError.body.detail === 'string'
              ? apiError.body.detail
              : 'Some rows are not valid any more; upload the file again to see which.';
          return htmlResponse(
            layout(frame(session, 'Upload a payment batch'), uploadForm(session, `Nothing was sent: ${reason}`)),
            400,
          );
        }
      },
      { action: 'pay', parse: 'none' },
    )
    .get(
      '/console/payment-batches/:id',
      async ({ params, request, session }) => {
        const row = await ownedBatch(session, params.id);
        const batch = (await paymentBatchResources(sql, [row]))[0]!;
        const searchParams = nonEmptyQuery(request);
        const page = { ...parsePage(searchParams, config.pageSizeMax), limit: ROWS_PER_PAGE };
        const lines = await batchLines(sql, row, page);
        const workflowId = paymentBatchWorkflowId(row.id);
        const content = html`<section class="card">${details([
          ['Rows', String(batch.row_count)],
          ['Created', when(new Date(batch.created))],
          ['Completed', batch.completed_at ? when(new Date(batch.completed_at)) : null],
          [
            'Results',
            html`<a href="/console/payment-batches/${batch.id}/results.csv" download>Download the results (CSV)</a>`,
          ],
          [
            'Workflow',
            html`<a href="${workflowUrl(config, workflowId)}" rel="noopener" target="_blank">${workflowId} in the \
Temporal UI</a>`,
          ],
        ])}</section>
<section class="card" id="live" data-live="/console/payment-batches/${batch.id}/live">${live(batch)}</section>
<h2>Rows</h2>
${table(
  ['Row', 'Recipient', 'Amount', 'Description', 'State', 'Payment', 'Error'],
  lines.rows.map((line) => [
    html`${line.rowNumber}`,
    line.phoneNumber,
    money(line.amount, line.currency),
    line.description,
    badge(line.state),
    line.paymentId === null
      ? html`<span class="muted">—</span>`
      : html`<a href="/console/payments/${line.paymentId}">#${line.paymentId}</a>`,
    line.error ?? '',
  ]),
  'No rows.',
)}
${pager(`/console/payment-batches/${batch.id}`, searchParams, page, lines.count)}`;
        return htmlResponse(layout(frame(session, `Payment batch #${batch.id}`), content));
      },
      { page: 'view' },
    )
    .get(
      '/console/payment-batches/:id/live',
      async ({ params, session }) => htmlResponse(live(await resourceOf(session, params.id))),
      { page: 'view' },
    )
    .get(
      '/console/payment-batches/:id/results.csv',
      async ({ params, session }) => {
        const batch = await ownedBatch(session, params.id);
        return csvResponse(
          batchResultsCsv((await batchLines(sql, batch)).rows),
          `payment-batch-${batch.id}-results.csv`,
        );
      },
      { page: 'view' },
    );
};
