import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { attemptDelivery } from '../../src/activities/legacy/webhook-delivery';
import { postWebhook, type TransportSettings } from '../../src/outbound/merchant-http';
import { WEBHOOK_TIMEOUT_MS } from '../../src/domain/webhooks';
import { createOrganization } from '../../src/services/organizations';
import { recordEvent } from '../../src/services/events';
import { createWebhook, deleteWebhook, openDelivery } from '../../src/services/webhooks';
import { webhookDeliveryWorkflowId } from '../../src/workflows/contracts/webhook-delivery';
import { testSql } from '../helpers';
import { makeCertificate, startReceiver, type Certificate, type Receiver } from '../webhook-receiver';

let certificate: Certificate;
let receiver: Receiver;
let sandbox: TransportSettings;

beforeAll(async () => {
  certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  sandbox = { sandbox: true, extraCa: certificate.cert, timeoutMs: WEBHOOK_TIMEOUT_MS };
});
afterAll(() => receiver.close());

let counter = 0;
const nextPath = () => `/transport/${++counter}`;

describe('postWebhook', () => {
  test('outside sandbox mode, loopback targets are refused before any request, by address or by name', async () => {
    const production: TransportSettings = { ...sandbox, sandbox: false };
    const path = nextPath();
    const cases: [string, RegExp][] = [
      [receiver.url(path), /^EADDRNOTPUBLIC: 127\.0\.0\.1 is a loopback or private address/],
      [`https://localhost:${receiver.port}${path}`, /^EADDRNOTPUBLIC: localhost resolves to (127\.0\.0\.1|::1), which is a loopback or private address/],
    ];
    for (const [target, refusal] of cases) {
      const result = await postWebhook(target, {}, '{}', production);
      expect(result.statusCode).toBeNull();
      expect(result.error).toMatch(refusal);
    }
    expect(receiver.requests(path)).toHaveLength(0);
  });

  test('a self-signed target is refused unless its CA is configured or the target asks to skip the check', async () => {
    const path = nextPath();
    const untrusted = await postWebhook(receiver.url(path), {}, '{}', { ...sandbox, extraCa: undefined });
    expect(untrusted).toMatchObject({ statusCode: null, error: expect.stringMatching(/self.signed certificate/) });
    expect((await postWebhook(receiver.url(path), {}, '{}', sandbox)).statusCode).toBe(200);
    const skipped = await postWebhook(`${receiver.url(path)}?skip-cert-verify=true`, {}, '{}', { ...sandbox, extraCa: undefined });
    expect(skipped.statusCode).toBe(200);
    expect(receiver.requests(path)).toHaveLength(2);
  });

  test('keeps only the first 1 KiB of the answer and does not follow redirects', async () => {
    const long = nextPath();
    receiver.script(long, [{ status: 200, body: 'x'.repeat(5000) }]);
    expect((await postWebhook(receiver.url(long), {}, '{}', sandbox)).responseExcerpt).toBe('x'.repeat(1024));
    const binary = nextPath();
    receiver.script(binary, [{ status: 200, body: 'a\u0000b' }]);
    expect((await postWebhook(receiver.url(binary), {}, '{}', sandbox)).responseExcerpt).toBe('ab');
    const moved = nextPath();
    receiver.script(moved, [{ status: 301, body: 'moved' }]);
    const redirected = await postWebhook(receiver.url(moved), {}, '{}', sandbox);
    expect(redirected).toMatchObject({ statusCode: 301, error: null, responseExcerpt: 'moved' });
    expect(receiver.requests(moved)).toHaveLength(1);
  });

  test('a connection error is reported, not thrown', async () => {
    const result = await postWebhook('https://127.0.0.1:1/nothing-listens', {}, '{}', sandbox);
    expect(result).toMatchObject({ statusCode: null, error: expect.stringContaining('ECONNREFUSED') });
  });
});

describe('attemptDelivery', () => {
  async function openTestDelivery(path: string) {
    const sql = testSql();
    const { organization, user } = await createOrganization(sql, 'Attempts');
    const webhook = await createWebhook(sql, { organizationId: organization.id, userId: user.id, event: 'contact.created', target: receiver.url(path) });
    const event = await recordEvent(sql, { organizationId: organization.id, type: 'contact.created', data: { id: 1 }, author: null });
    const deliveryId = await openDelivery(sql, {
      workflowId: webhookDeliveryWorkflowId(event.id, webhook.id), deliveryId: null, organizationId: organization.id,
      webhookId: webhook.id, eventId: event.id, redelivery: false,
    });
    return { webhook, deliveryId: deliveryId! };
  }

  test('is idempotent per (delivery, attempt): a repeated attempt returns the logged result and sends nothing', async () => {
    const path = nextPath();
    receiver.script(path, [{ status: 500 }]);
    const { deliveryId } = await openTestDelivery(path);
    const first = await attemptDelivery(testSql(), sandbox, deliveryId, 1);
    const repeated = await attemptDelivery(testSql(), sandbox, deliveryId, 1);
    expect(first).toEqual({ outcome: 'failed', statusCode: 500, detail: null });
    expect(repeated).toEqual(first);
    expect(receiver.requests(path)).toHaveLength(1);
    expect(await attemptDelivery(testSql(), sandbox, deliveryId, 2)).toMatchObject({ outcome: 'delivered', statusCode: 200 });
    const rows = await testSql()<{ attempt: number }[]>`select attempt from webhook_delivery_attempts where delivery_id = ${deliveryId} order by attempt`;
    expect(rows.map((row) => row.attempt)).toEqual([1, 2]);
  });

  test('a deleted webhook is not called: the attempt is cancelled and not logged', async () => {
    const path = nextPath();
    const { webhook, deliveryId } = await openTestDelivery(path);
    await deleteWebhook(testSql(), webhook.id, 'deleted');
    expect(await attemptDelivery(testSql(), sandbox, deliveryId, 1)).toEqual({ outcome: 'cancelled', statusCode: null, detail: 'the webhook was deleted' });
    expect(receiver.requests(path)).toHaveLength(0);
  });
});
