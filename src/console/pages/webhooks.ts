/**
 * Webhooks: create, edit and delete; a webhook's deliveries with every attempt and redelivery (the
 * same `redeliverEvent` as POST /api/webhooks/:id/deliveries); its recovery (every event since a
 * time again), disabling and enabling (services/webhooks/webhook-recovery.ts, as the API); a test event; the
 * organization's signing secret (revealed on demand, rotated) and its HTTP Basic credentials.
 *
 * The test event is a synthetic message sent once, at once, and shown on the page: the body
 * `{"hook": <webhook>, "data": {"test": true, ...}}`, signed and authenticated exactly as a
 * delivery is, to the webhook's target with the same 5-second limit and guarded transport. It is no
 * event (docs/api.md#events), so nothing is recorded: no event row, no delivery, no retries.
 */
import type { EventId } from '../../domain/ids';
import { randomBytes } from 'node:crypto';
import { Elysia } from 'elysia';
import { outgoingTransport, postWebhook, type HttpAttempt } from '../../outbound/merchant-http';
import type { AppDeps } from '../../http/context';
import { validate } from '../../domain/input';
import { findApiError } from '../../http/errors';
import { parsePage } from '../../http/pagination';
import { EVENT_TYPES } from '../../domain/events';
import { formatTimestamp } from '../../formats/time';
import {
  WEBHOOK_TIMEOUT_MS,
  deliveryHeaders,
  serializeWebhook,
  waitingReason,
  type DeliveryRow,
  type RecoveryRow,
  type WebhookRow,
} from '../../domain/webhooks';
import {
  changeOwnWebhook,
  createOwnWebhook,
  deleteOwnWebhook,
  findOwnWebhook,
  listWebhooks,
  webhookDeletion,
  webhookSchemas,
} from '../../services/webhooks/webhooks';
import {
  deliverySecrets,
  rotateSigningSecret,
  setBasicCredentials,
  showSigningSecret,
  type SigningSecretView,
} from '../../services/webhooks/webhook-secrets';
import { listDeliveries, redeliverEvent } from '../../services/webhooks/webhook-deliveries';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { html, type Html } from '../html';
import { htmlResponse, redirect } from '../http';
import {
  actionButton,
  badge,
  details,
  formErrors,
  input,
  layout,
  notice,
  pager,
  postForm,
  sectionFrame,
  select,
  table,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { listPage, type ListView } from '../list-page';
import { consoleSessionPlugin, type FormFields } from '../session';
import { DONE_NOTICES, disabledWebhooksNotice, ownedId, ownedOrMissing } from './common';
import {
  RecoveryInput,
  disableOwnWebhook,
  disabledWebhooks,
  enableOwnWebhook,
  listRecoveries,
  recoverWebhook,
} from '../../services/webhooks/webhook-recovery';

/** The console lists every live webhook of the organization on one page. */
const ALL_WEBHOOKS = { limit: 1000, offset: 0 };

const eventChoices = EVENT_TYPES.map((type) => [type, type] as const);

/** One delivery on its webhook's page: its event, its state, why it waits, its attempts, and a redelivery button. */
function deliveryCard(session: ConsoleSession, webhookId: number, delivery: DeliveryRow, deleted: boolean): Html {
  return html`<section class="card delivery" id="delivery-${delivery.id}" aria-label="Delivery ${delivery.id}">
<h3>Delivery #${delivery.id} ${badge(delivery.status)}${
    delivery.redelivery
      ? html` <span \
class="badge">redelivery</span>`
      : ''
  }</h3>
<p><a href="/console/events/${delivery.eventId}">${delivery.eventType} event #${delivery.eventId}</a> \
· started ${when(delivery.created)}${delivery.finishedAt ? html` · finished ${when(delivery.finishedAt)}` : ''}</p>
${
  waitingReason(delivery.probing) === null
    ? ''
    : html`<p class="field-error" \
role="status">Waiting: ${waitingReason(delivery.probing)}</p>`
}
${attemptsTable(delivery)}
${
  deleted
    ? ''
    : actionButton(session, `/console/webhooks/${webhookId}/redeliver`, 'Redeliver this event', {
        event: delivery.eventId,
      })
}
</section>`;
}

function attemptsTable(delivery: DeliveryRow): Html {
  return table(
    ['Attempt', 'Time', 'Status code', 'Duration', 'Outcome', 'Response'],
    delivery.attempts.map((attempt) => [
      attempt.attempt,
      when(attempt.startedAt),
      attempt.statusCode ?? html`<span class="muted">none</span>`,
      `${attempt.durationMs} ms`,
      badge(attempt.outcome),
      attempt.error
        ? html`<span class="field-error">${attempt.error}</span>`
        : html`<pre>${attempt.responseExcerpt ?? ''}</pre>`,
    ]),
    'No attempt yet.',
  );
}

function testResult(sent: HttpAttempt, target: string): Html {
  const delivered = sent.statusCode !== null && sent.statusCode >= 200 && sent.statusCode < 300;
  return notice(
    html`<strong>Test event sent to ${target}</strong>: ${
      sent.statusCode === null
        ? html`no answer (${sent.error ?? 'no response'})`
        : html`answered ${sent.statusCode} in ${sent.durationMs} ms${
            delivered ? ' (delivered)' : ' (a delivery would count this as failed)'
          }`
    }
${sent.responseExcerpt ? html`<pre>${sent.responseExcerpt}</pre>` : ''}`,
    delivered ? 'ok' : 'error',
  );
}

/** What the webhook list shows again: a notice, a refused form, the secret just revealed or rotated. */
type ListState = {
  done?: string;
  create?: { values: Values; errors: FieldErrors };
  basic?: { values: Values; errors: FieldErrors };
  secret?: SigningSecretView;
};

/** The webhook list, with the forms that create a webhook and set the signing secret and the Basic credentials. */
const webhookListPage = ({ sql, config }: AppDeps) =>
  listPage(config, {
    path: '/console/webhooks',
    section: 'webhooks',
    title: 'Webhooks',
    all: async (session) => (await listWebhooks(sql, session.organizationId, {}, ALL_WEBHOOKS)).rows,
    columns: [
      ['Webhook', (webhook) => html`<a href="/console/webhooks/${webhook.id}">#${webhook.id}</a>`],
      ['Event', (webhook) => webhook.event],
      ['Target', (webhook) => webhook.target],
      ['Status', (webhook) => badge(webhook.disabledAt ? 'disabled' : 'enabled')],
      ['Created', (webhook) => when(webhook.created)],
    ],
    empty: 'No webhooks yet.',
    above: async ({ session, state }: ListView<ListState>) => {
      const done = state.done ? DONE_NOTICES[state.done] : undefined;
      return html`${done ? notice(done) : ''}${disabledWebhooksNotice(
        await disabledWebhooks(sql, session.organizationId),
      )}`;
    },
    below: async ({ session, state }) => {
      const secretView = state.secret ?? (await showSigningSecret(sql, session));
      const create = state.create ?? { values: {}, errors: {} };
      const basic = state.basic ?? { values: {}, errors: {} };
      return html`<div class="cards">
<section class="card" aria-labelledby="new-webhook"><h2 id="new-webhook">New webhook</h2>
${formErrors(create.errors, ['event', 'target'])}
${postForm(
  session,
  '/console/webhooks',
  html`
${select('event', 'Event', eventChoices, create.values, create.errors)}
${input('target', 'Target URL', create.values, create.errors, {
  type: 'url',
  required: true,
  hint: 'An https:// URL that answers 2xx within 5 seconds.',
})}
<div class="actions"><button type="submit" class="primary">Create webhook</button></div>`,
)}</section>
<section class="card" aria-labelledby="signing"><h2 id="signing">Signing secret</h2>
<p class="muted">Deliveries are signed per <a href="https://www.standardwebhooks.com" rel="noopener">Standard \
Webhooks</a> with your organization's secret.</p>
${
  state.secret
    ? html`<p>Secret: <code class="secret" \
id="signing-secret">${state.secret.signingSecret}</code></p>`
    : ''
}
${
  secretView.previousSecretExpiresAt
    ? html`<p class="muted">The previous secret also signs \
until ${when(secretView.previousSecretExpiresAt)}.</p>`
    : ''
}
<div class="actions">${state.secret ? '' : actionButton(session, '/console/webhook-settings/reveal', 'Reveal secret')}
${actionButton(session, '/console/webhook-settings/rotate', 'Rotate secret', {}, 'danger')}</div></section>
<section class="card" aria-labelledby="basic"><h2 id="basic">HTTP Basic credentials</h2>
<p>Deliveries ${
        secretView.basicAuth
          ? html`carry <strong>HTTP Basic \
credentials</strong>.`
          : html`carry <strong>no \
Authorization header</strong>.`
      }</p>
${formErrors(basic.errors, ['username', 'password'])}
${postForm(
  session,
  '/console/webhook-settings/basic-auth',
  html`
${input('username', 'User name', basic.values, basic.errors, { required: true, autocomplete: 'off' })}
${input('password', 'Password', {}, basic.errors, { type: 'password', required: true, autocomplete: 'new-password' })}
<div class="actions"><button type="submit">Set credentials</button></div>`,
)}
${
  secretView.basicAuth
    ? html`<p>${actionButton(
        session,
        '/console/webhook-settings/basic-auth/clear',
        'Clear credentials',
        {},
        'danger',
      )}</p>`
    : ''
}
</section></div>`;
    },
  });

export const webhookRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const schemas = webhookSchemas(config.sandbox);
  const frame = sectionFrame(config.sandbox, 'webhooks');

  const ownedWebhook = (session: ConsoleSession, rawId: string, evenIfDeleted = false): Promise<WebhookRow> =>
    ownedOrMissing(
      findOwnWebhook(sql, session.organizationId, ownedId(rawId, 'Webhook'), evenIfDeleted),
      'No such webhook in your organization.',
    );

  /** A synthetic test message, signed like a delivery, sent once (see the module comment). */
  async function sendTestEvent(webhook: WebhookRow): Promise<HttpAttempt> {
    const body = JSON.stringify({
      hook: serializeWebhook(webhook),
      data: {
        test: true,
        event: webhook.event,
        message: 'A test event sent from the web console.',
        created: formatTimestamp(new Date()),
      },
    });
    const messageId = `msg_test_${webhook.id}_${randomBytes(6).toString('hex')}`;
    const headers = deliveryHeaders(
      await deliverySecrets(sql, webhook.organizationId),
      messageId,
      Math.floor(Date.now() / 1000),
      body,
    );
    return await postWebhook(
      webhook.target,
      headers,
      body,
      outgoingTransport({ sandbox: config.sandbox, caFile: config.webhooks.caFile, timeoutMs: WEBHOOK_TIMEOUT_MS }),
    );
  }

  const webhookList = webhookListPage(deps);

  type DetailState = {
    done?: string;
    edit?: { values: Values; errors: FieldErrors };
    test?: HttpAttempt;
    redeliveryError?: string;
    recover?: { values: Values; errors: FieldErrors };
  };

  /** The recovery form (every event since a time, delivered again) and the latest recoveries with their progress. */
  function recoveryCard(
    session: ConsoleSession,
    webhook: WebhookRow,
    recoveries: readonly RecoveryRow[],
    form: { values: Values; errors: FieldErrors },
  ): Html {
    const progress = (recovery: RecoveryRow) => {
      const done = recovery.events - recovery.deliveries.pending;
      return html`<progress max="${Math.max(1, recovery.events)}" \
value="${done}"></progress> ${done} of ${recovery.events}
${recovery.deliveries.failed > 0 ? html`<span class="muted">(${recovery.deliveries.failed} exhausted)</span>` : ''}`;
    };
    return html`<section class="card" aria-labelledby="recover"><h2 id="recover">Recover missed events</h2>
<p class="muted">Every ${webhook.event} event created in the period gets a fresh delivery, with its own 10 attempts: \
after the target was down, \
or after the webhook was disabled. Events are kept ${config.retention.days} days.</p>
${
  webhook.disabledAt
    ? html`<p>Enable the webhook first.</p>`
    : html`${formErrors(form.errors, ['since', 'until'])}
${postForm(
  session,
  `/console/webhooks/${webhook.id}/recover`,
  html`
${input('since', 'Since (UTC)', form.values, form.errors, { type: 'datetime-local', required: true })}
${input('until', 'Until (UTC)', form.values, form.errors, { type: 'datetime-local', hint: 'Now when left empty.' })}
<div class="actions"><button type="submit">Redeliver events</button></div>`,
)}`
}
${
  recoveries.length === 0
    ? ''
    : table(
        ['Recovery', 'Period (UTC)', 'Asked', 'Progress', 'Status'],
        recoveries.map((recovery) => [
          `#${recovery.id}`,
          html`${when(recovery.since)} to ${when(recovery.until)}`,
          when(recovery.created),
          progress(recovery),
          badge(recovery.deliveries.pending > 0 ? 'delivering' : 'finished'),
        ]),
        '',
      )
}</section>`;
  }

  /** Why a webhook sends nothing: deleted (and why), or disabled (and why, with the button that enables it). */
  function stateNotices(
    session: ConsoleSession,
    webhook: WebhookRow,
    deletion: { deletedAt: Date; reason: string | null } | null,
  ): Html {
    return html`${
      deletion
        ? notice(
            html`This webhook \
was ${deletion.reason === 'gone' ? 'deleted after its target answered 410 Gone' : 'deleted'} \
${when(deletion.deletedAt)}. Its \
delivery log stays readable.`,
            'info',
          )
        : ''
    }
${
  !deletion && webhook.disabledAt
    ? notice(
        html`<strong>This webhook is disabled</strong> (${
          webhook.disabledReason === 'failing'
            ? `its target failed every delivery for ${Math.round(config.webhooks.disableAfterHours / 24)} days`
            : 'disabled by hand'
        }, ${when(webhook.disabledAt)}): nothing is delivered to \
it. ${actionButton(session, `/console/webhooks/${webhook.id}/enable`, 'Enable webhook', {}, 'primary')}`,
        'error',
      )
    : ''
}`;
  }

  async function detailPage(
    request: Request,
    session: ConsoleSession,
    webhook: WebhookRow,
    state: DetailState,
    status = 200,
  ): Promise<Response> {
    const searchParams = new URL(request.url).searchParams;
    const page = parsePage(
      new URLSearchParams(searchParams.get('offset') ? { offset: searchParams.get('offset')! } : {}),
      config.pageSizeMax,
    );
    const [{ count, rows: deliveries }, deletion, recoveries] = await Promise.all([
      listDeliveries(sql, webhook, {}, page),
      webhookDeletion(sql, webhook.id),
      listRecoveries(sql, webhook.id, 5),
    ]);
    const deleted = deletion?.deletedAt ?? null;
    const edit = state.edit ?? { values: { event: webhook.event, target: webhook.target }, errors: {} };
    const done = state.done ? DONE_NOTICES[state.done] : undefined;
    const content = html`${done ? notice(done) : ''}${state.test ? testResult(state.test, webhook.target) : ''}
${state.redeliveryError ? notice(state.redeliveryError, 'error') : ''}
${stateNotices(session, webhook, deletion)}
<section class="card">${details([
      ['Event', webhook.event],
      ['Target', webhook.target],
      ['Status', badge(webhook.disabledAt ? 'disabled' : 'enabled')],
      ['Created', when(webhook.created)],
      ['Updated', when(webhook.updated)],
    ])}
${
  deleted
    ? ''
    : html`<div class="actions">${actionButton(session, `/console/webhooks/${webhook.id}/test`, 'Send a test event')}
${
  webhook.disabledAt
    ? ''
    : actionButton(session, `/console/webhooks/${webhook.id}/disable`, 'Disable webhook', {}, 'danger')
}
<a href="/console/webhooks/${webhook.id}/delete">Delete webhook</a></div>`
}</section>
${deleted ? '' : recoveryCard(session, webhook, recoveries, state.recover ?? { values: {}, errors: {} })}
${
  deleted
    ? ''
    : html`<section class="card" aria-labelledby="edit"><h2 \
id="edit">Edit</h2>${formErrors(edit.errors, ['event', 'target'])}
${postForm(
  session,
  `/console/webhooks/${webhook.id}`,
  html`
${select('event', 'Event', eventChoices, edit.values, edit.errors)}
${input('target', 'Target URL', edit.values, edit.errors, { type: 'url', required: true })}
<div class="actions"><button type="submit">Save</button></div>`,
)}</section>`
}
<h2 id="deliveries">Deliveries</h2>
${
  deliveries.length === 0
    ? html`<p class="empty">No deliveries yet: the webhook receives events that happen after it \
was created.</p>`
    : ''
}
${deliveries.map((delivery) => deliveryCard(session, webhook.id, delivery, deleted !== null))}
${pager(`/console/webhooks/${webhook.id}`, new URLSearchParams(), page, count)}`;
    return htmlResponse(layout(frame(session, `Webhook #${webhook.id}`), content), status);
  }

  const fieldErrorsOf = (error: unknown): FieldErrors => {
    const apiError = findApiError(error);
    if (apiError?.status !== 400) throw error;
    return apiError.body as FieldErrors;
  };
  const text = (form: FormFields, name: string) => (typeof form[name] === 'string' ? (form[name] as string) : '');

  return new Elysia({ name: 'console-webhooks' })
    .use(consoleSessionPlugin(deps))
    .get(
      '/console/webhooks',
      ({ request, session }) =>
        webhookList({ request, session }, { done: new URL(request.url).searchParams.get('done') ?? undefined }),
      { page: 'integrate' },
    )
    .post(
      '/console/webhooks',
      async ({ request, session, form }) => {
        try {
          const input = validate(schemas.create, form);
          const webhook = await createOwnWebhook(sql, session, input, null);
          return redirect(`/console/webhooks/${webhook.id}?done=webhook-created`);
        } catch (error) {
          return await webhookList(
            { request, session },
            { create: { values: form, errors: fieldErrorsOf(error) } },
            400,
          );
        }
      },
      { action: 'integrate', parse: 'none' },
    )
    .get(
      '/console/webhooks/:id',
      async ({ params, request, session }) =>
        detailPage(request, session, await ownedWebhook(session, params.id, true), {
          done: new URL(request.url).searchParams.get('done') ?? undefined,
        }),
      { page: 'integrate' },
    )
    .post(
      '/console/webhooks/:id',
      async ({ params, request, session, form }) => {
        const webhook = await ownedWebhook(session, params.id);
        try {
          await ownedOrMissing(
            changeOwnWebhook(sql, session, webhook.id, validate(schemas.create, form), null),
            'The webhook was deleted meanwhile.',
          );
          return redirect(`/console/webhooks/${webhook.id}?done=webhook-updated`);
        } catch (error) {
          return await detailPage(
            request,
            session,
            webhook,
            { edit: { values: form, errors: fieldErrorsOf(error) } },
            400,
          );
        }
      },
      { action: 'integrate', parse: 'none' },
    )
    .get(
      '/console/webhooks/:id/delete',
      async ({ params, session }) => {
        const webhook = await ownedWebhook(session, params.id);
        const content = html`<p>Delete webhook #${webhook.id} (${webhook.event} to ${webhook.target})? No further \
deliveries are made; its delivery log stays readable.</p>
<div \
class="actions">${actionButton(session, `/console/webhooks/${webhook.id}/delete`, 'Delete webhook', {}, 'danger')} <a \
href="/console/webhooks/${webhook.id}">Cancel</a></div>`;
        return htmlResponse(layout(frame(session, `Delete webhook #${webhook.id}`), content));
      },
      { page: 'integrate' },
    )
    .post(
      '/console/webhooks/:id/delete',
      async ({ params, session }) => {
        const webhook = await ownedWebhook(session, params.id);
        await deleteOwnWebhook(deps, session, webhook.id, null);
        return redirect('/console/webhooks?done=webhook-deleted');
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhooks/:id/redeliver',
      async ({ params, request, session, form }) => {
        const webhook = await ownedWebhook(session, params.id);
        const eventId = Number(text(form, 'event'));
        try {
          await redeliverEvent(
            deps,
            session,
            webhook,
            (Number.isSafeInteger(eventId) && eventId > 0 ? eventId : 0) as EventId,
            null,
          );
        } catch (error) {
          const errors = fieldErrorsOf(error);
          return await detailPage(
            request,
            session,
            webhook,
            { redeliveryError: Object.values(errors).flat().join(' ') },
            400,
          );
        }
        return redirect(`/console/webhooks/${webhook.id}?done=redelivery-started`);
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhooks/:id/recover',
      async ({ params, request, session, form }) => {
        const webhook = await ownedWebhook(session, params.id);
        const values = { since: text(form, 'since'), until: text(form, 'until') };
        try {
          const input = validate(RecoveryInput, {
            since: values.since,
            ...(values.until ? { until: values.until } : {}),
          });
          await recoverWebhook(deps, session, webhook, input, null);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          const body = apiError.body as Record<string, string[] | string>;
          const errors: FieldErrors =
            typeof body.detail === 'string' ? { since: [body.detail] } : (body as FieldErrors);
          return await detailPage(request, session, webhook, { recover: { values, errors } }, 400);
        }
        return redirect(`/console/webhooks/${webhook.id}?done=recovery-started#recover`);
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhooks/:id/disable',
      async ({ params, session }) => {
        const webhook = await ownedWebhook(session, params.id);
        await disableOwnWebhook(deps, session, webhook.id, null);
        return redirect(`/console/webhooks/${webhook.id}?done=webhook-disabled`);
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhooks/:id/enable',
      async ({ params, session }) => {
        const webhook = await ownedWebhook(session, params.id);
        await enableOwnWebhook(sql, session, webhook.id, null);
        return redirect(`/console/webhooks/${webhook.id}?done=webhook-enabled`);
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhooks/:id/test',
      async ({ params, request, session }) => {
        const webhook = await ownedWebhook(session, params.id);
        return await detailPage(request, session, webhook, { test: await sendTestEvent(webhook) });
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhook-settings/reveal',
      async ({ request, session }) =>
        webhookList({ request, session }, { secret: await showSigningSecret(sql, session) }),
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhook-settings/rotate',
      async ({ request, session }) =>
        webhookList({ request, session }, { secret: await rotateSigningSecret(sql, session) }),
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhook-settings/basic-auth',
      async ({ request, session, form }) => {
        const username = text(form, 'username').trim();
        const password = text(form, 'password');
        const errors: FieldErrors = {};
        // RFC 7617: the user-id of Basic credentials cannot contain a colon.
        if (username === '' || username.includes(':')) errors.username = ['Enter a user name without ":".'];
        if (password === '') errors.password = ['Enter a password.'];
        if (username.length > 200 || password.length > 200) errors.password = ['Use at most 200 characters.'];
        if (Object.keys(errors).length > 0)
          return await webhookList({ request, session }, { basic: { values: { username }, errors } }, 400);
        await setBasicCredentials(sql, session, { username, password });
        return redirect('/console/webhooks?done=basic-auth-set');
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/webhook-settings/basic-auth/clear',
      async ({ session }) => {
        await setBasicCredentials(sql, session, null);
        return redirect('/console/webhooks?done=basic-auth-cleared');
      },
      { action: 'integrate', parse: 'none' },
    );
};
