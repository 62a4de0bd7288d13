import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { postWebhook, type TransportSettings } from '../../src/outbound/merchant-http';
import { WEBHOOK_TIMEOUT_MS } from '../../src/domain/webhooks';
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
      [
        `https://localhost:${receiver.port}${path}`,
        /^EADDRNOTPUBLIC: localhost resolves to (127\.0\.0\.1|::1), which is a loopback or private address/,
      ],
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
    const skipped = await postWebhook(`${receiver.url(path)}?skip-cert-verify=true`, {}, '{}', {
      ...sandbox,
      extraCa: undefined,
    });
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
