import { describe, expect, test } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import { isLocalHostName, isPublicAddress } from '../../src/formats/network-addresses';
import { WEBHOOK_ATTEMPTS, retryDelayMs, totalAttempts } from '../../src/domain/webhook-schedule';
import {
  asksToSkipCertificateCheck,
  attemptOutcome,
  basicAuthorization,
  isSigningSecret,
  newSigningSecret,
  signatureHeader,
} from '../../src/domain/webhooks';

describe('retry schedule', () => {
  const schedule = {
    retryDelaysMs: [10_000, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000],
    jitter: 0.2,
  };

  test('10 attempts: the first at once, then one after each wait', () => {
    expect(totalAttempts(schedule)).toBe(WEBHOOK_ATTEMPTS);
    expect(() => retryDelayMs(schedule, 1, 0.5)).toThrow(RangeError);
    expect(() => retryDelayMs(schedule, 11, 0.5)).toThrow(RangeError);
  });

  test('each wait is spread over ±jitter of its length, and the schedule still increases', () => {
    expect(retryDelayMs(schedule, 2, 0)).toBe(8_000);
    expect(retryDelayMs(schedule, 2, 0.5)).toBe(10_000);
    expect(retryDelayMs(schedule, 2, 0.999999)).toBe(12_000);
    for (let attempt = 3; attempt <= 10; attempt += 1) {
      expect(retryDelayMs(schedule, attempt, 0)).toBeGreaterThan(retryDelayMs(schedule, attempt - 1, 0.999999));
    }
    expect(retryDelayMs({ ...schedule, jitter: 0 }, 5, 0.9)).toBe(900_000);
  });
});

describe('attempt outcome', () => {
  test('any 2xx is delivered, 410 is gone, anything else (3xx included) failed', () => {
    expect([200, 201, 204, 299].map(attemptOutcome)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    expect([410].map(attemptOutcome)).toEqual(['gone']);
    expect(
      [null, 100, 301, 302, 304, 400, 404, 409, 429, 500, 503]
        .map(attemptOutcome)
        .every((outcome) => outcome === 'failed'),
    ).toBe(true);
  });
});

describe('signatures', () => {
  test('the standardwebhooks package verifies ours, for each active secret', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    expect(isSigningSecret(current)).toBe(true);
    expect(isSigningSecret('whsec_c2hvcnQ=')).toBe(false);
    const body = JSON.stringify({ hook: { id: 1 }, data: { é: 'ü' } });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'msg_1_2',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([current, previous], 'msg_1_2', timestamp, body),
    };
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(current).verify(body.replace('ü', 'u'), headers)).toThrow();
  });

  test('Basic credentials are base64 of user:password in UTF-8', () => {
    expect(basicAuthorization('Aladdin', 'open sesame')).toBe('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
  });
});

describe('target addresses', () => {
  test('loopback, private, link-local and other special ranges are not public', () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '[::1]',
    ]) {
      expect(isPublicAddress(address)).toBe(false);
    }
    for (const address of ['8.8.8.8', '93.184.215.14', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(address)).toBe(true);
    expect(isPublicAddress('merchant.example')).toBe(false);
    expect(['localhost', 'LOCALHOST.', 'api.localhost'].every(isLocalHostName)).toBe(true);
    expect(isLocalHostName('localhost.merchant.example')).toBe(false);
  });

  test("skip-cert-verify is read from the target's query string", () => {
    expect(asksToSkipCertificateCheck(new URL('https://h.example/x?skip-cert-verify=true'))).toBe(true);
    expect(asksToSkipCertificateCheck(new URL('https://h.example/x?skip-cert-verify=1'))).toBe(true);
    expect(asksToSkipCertificateCheck(new URL('https://h.example/x?skip-cert-verify=false'))).toBe(false);
    expect(asksToSkipCertificateCheck(new URL('https://h.example/x'))).toBe(false);
  });
});
