/** Small helpers the console's page modules share. */
import type { Config } from '../../config';
import { parseId } from '../../http/context';
import { asId, type Id, type IdKind } from '../../domain/ids';
import { ForbiddenError, NotFoundError } from '../../domain/errors';
import type { WebhookRow } from '../../domain/webhooks';
import type { TimelineEntry } from '../../services/webhooks/events';
import { html, type Html } from '../html';
import { consoleError } from '../http';
import { badge, notice, when } from '../layout';

/** The query string without empty values: a blank filter field means "no filter", as for the API. */
export function nonEmptyQuery(request: Request): URLSearchParams {
  return new URLSearchParams([...new URL(request.url).searchParams].filter(([, value]) => value.trim() !== ''));
}

/** A path id as the id of the page's resource (`kind`), or the 404 page. */
export function ownedId<Kind extends IdKind>(raw: string, kind: Kind): Id<Kind> {
  const id = parseId(raw);
  if (id === null) throw consoleError(404, 'Not found.');
  return asId(kind, id);
}

/**
 * The organization's object a page shows, found by a use case within the organization's scope: a
 * missing object and another organization's are the same 404 page here (the console never tells
 * them apart).
 */
export async function ownedOrMissing<T>(found: Promise<T>, message: string): Promise<T> {
  try {
    return await found;
  } catch (error) {
    if (error instanceof NotFoundError || error instanceof ForbiddenError) throw consoleError(404, message);
    throw error;
  }
}

/** A workflow's page in the Temporal UI (`TEMPORAL_UI_URL`). */
export function workflowUrl(config: Pick<Config, 'console' | 'temporal'>, workflowId: string): string {
  const namespace = encodeURIComponent(config.temporal.namespace);
  return `${config.console.temporalUiUrl}/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}`;
}

/** Notices shown after a redirect (`?done=<key>`): fixed sentences, never text from the URL. */
export const DONE_NOTICES: Readonly<Record<string, string>> = {
  'contact-created': 'Contact created.',
  'payment-created': 'Payment created: its amount is taken out of the wallet now, and it is sent through the network.',
  'payment-cancelled': 'Payment cancelled: its amount is back in the wallet.',
  'subscription-cancelled': 'Subscription cancelled: no further request is created from it.',
  'reversal-created': 'Reversal started: the amount is taken out of the wallet now and sent back to the subscriber.',
  'webhook-created': 'Webhook created. It receives every future event of its type.',
  'webhook-updated': 'Webhook saved.',
  'webhook-deleted': 'Webhook deleted. No further deliveries are made; its delivery log stays readable.',
  'redelivery-started': 'Redelivery started: a fresh delivery of the event, with its own attempts.',
  'recovery-started':
    "Recovery started: every event of the webhook's type in the period gets a fresh delivery, with its own attempts.",
  'webhook-disabled': 'Webhook disabled: nothing is delivered to it until you enable it.',
  'webhook-enabled': 'Webhook enabled: it receives events from now on. Recover what it missed below.',
  'basic-auth-set': 'HTTP Basic credentials saved: deliveries carry them from now on.',
  'basic-auth-cleared': 'HTTP Basic credentials cleared: deliveries carry no Authorization header.',
  'settings-saved': 'Collection settings saved.',
  'key-revoked': 'API key revoked: the API answers it 401 from now on.',
  'user-created': 'User created. They can sign in with the email and password you gave.',
  'user-removed': 'User removed: signed out everywhere, API keys revoked.',
  'role-changed': 'Role changed. Their API keys follow the new role at once.',
};

/** The warning every page about webhooks shows while some are disabled (the overview, the webhook list). */
export function disabledWebhooksNotice(webhooks: readonly WebhookRow[]): Html | '' {
  if (webhooks.length === 0) return '';
  return notice(
    html`<strong>${
      webhooks.length === 1 ? 'A webhook is disabled' : `${webhooks.length} webhooks are disabled`
    }</strong>: nothing is delivered to
${webhooks.map(
  (webhook, index) =>
    html`${index > 0 ? ', ' : ''}<a href="/console/webhooks/${webhook.id}">#${webhook.id}</a> (${webhook.target}, ${
      webhook.disabledReason === 'failing' ? 'its target failed every delivery for days' : 'disabled by hand'
    }, ${when(webhook.disabledAt!)})`,
)}.
Enable it on its page, then recover the events it missed.`,
    'error',
  );
}

/** An object's status changes, oldest first, each linked to its event (a request's and a payment's page). */
export function timelineList(timeline: readonly TimelineEntry[], empty: string): Html {
  if (timeline.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<ol class="timeline">${timeline.map(
    (change) => html`<li>
${badge(change.status)} ${when(change.created)} · <a \
href="/console/events/${change.eventId}">event #${change.eventId}</a>${
      change.error
        ? html` · <span \
class="muted">${change.error}</span>`
        : ''
    }</li>`,
  )}</ol>`;
}
