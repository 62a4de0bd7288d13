/** pawaPay's v2 pieces: signed callbacks (RFC 9421), failure codes in plain words, active-conf limits and amounts. */
import { describe, expect, test } from 'bun:test';
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { currenciesOfNetwork, networkByName } from '../../src/domain/networks';
import { pawapayFailure, pawapayFailureAdvice } from '../../src/network/pawapay/failures';
import {
  amountProblem,
  formatAmount,
  PAWAPAY_PROVIDERS,
  readActiveConf,
  type PawapayLimits,
} from '../../src/network/pawapay/limits';
import { parsePublicKeys, signCallback, verifySignedCallback } from '../../src/network/pawapay/signatures';

const KEY_ID = 'HTTP_EC_P256_KEY:1';
const URL_CALLED = 'https://pay.example/network/pawapay/deposits';
const BODY =
  '{"depositId":"8917c345-4791-4285-a416-62f24b6982db","status":"COMPLETED","amount":"1500","currency":"TZS"}';
const NOW = Date.UTC(2026, 8, 23, 13, 55, 10);

const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pem = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();
const KEYS = parsePublicKeys([{ id: KEY_ID, key: pem(ec.publicKey) }]);

const signed = (options: Partial<Parameters<typeof signCallback>[1]> = {}, body: string = BODY) =>
  signCallback(
    { method: 'POST', url: URL_CALLED, body },
    { keyId: KEY_ID, privateKey: ec.privateKey, now: NOW, ...options },
  );
const check = (
  headers: Record<string, string>,
  extra: { body?: string | Uint8Array; url?: string; now?: number; keys?: ReadonlyMap<string, KeyObject> } = {},
) =>
  verifySignedCallback(
    { method: 'POST', url: extra.url ?? URL_CALLED, headers: new Headers(headers), rawBody: extra.body ?? BODY },
    extra.keys ?? KEYS,
    { now: extra.now ?? NOW + 2_000 },
  );
const reasonOf = (verdict: ReturnType<typeof check>) => (verdict.valid ? 'valid' : verdict.reason);

describe('pawaPay public keys (GET /v2/public-key/http)', () => {
  test('[{ id, key }] by id, PEM or bare base64; entries that are not keys are left out', () => {
    const der = ec.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    const keys = parsePublicKeys([
      { id: KEY_ID, key: pem(ec.publicKey) },
      { id: 'B64:1', key: der },
      { id: 'BAD:1', key: 'not a key' },
      { key: 'no id' },
      null,
    ]);
    expect([...keys.keys()]).toEqual([KEY_ID, 'B64:1']);
    expect(keys.get(KEY_ID)!.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(() => parsePublicKeys({ id: KEY_ID })).toThrow('not a list');
  });
});

describe('signed callbacks', () => {
  test('a callback signed as pawaPay signs it verifies: DER or raw ECDSA, sha-512 or sha-256, text or bytes', () => {
    expect(check(signed())).toEqual({ valid: true, keyId: KEY_ID });
    expect(check(signed({ dsaEncoding: 'ieee-p1363' }))).toEqual({ valid: true, keyId: KEY_ID });
    expect(check(signed({ digest: 'sha-256' }), { body: new TextEncoder().encode(BODY) })).toEqual({
      valid: true,
      keyId: KEY_ID,
    });
    const headers = signed();
    expect(headers['Signature-Input']).toBe(
      `sig-pp=("@method" "@authority" "@path" "signature-date" "content-digest" "content-type");alg="ecdsa-p256-sha256";keyid="${KEY_ID}";created=${NOW / 1000};expires=${NOW / 1000 + 60}`,
    );
    expect(headers['Content-Digest']).toBe(`sha-512=:${createHash('sha512').update(BODY).digest('base64')}:`);
  });

  test("a signature base written out by hand from RFC 9421 §2.5 verifies (the base is the RFC's, not only ours)", () => {
    const date = '2026-09-23T13:55:10.673817314Z';
    const digest = `sha-256=:${createHash('sha256').update(BODY).digest('base64')}:`;
    const params = `("@method" "@authority" "@path" "signature-date" "content-digest" "content-type");alg="ecdsa-p256-sha256";keyid="${KEY_ID}";created=${NOW / 1000}`;
    const base = [
      '"@method": POST',
      '"@authority": pay.example',
      '"@path": /network/pawapay/deposits',
      `"signature-date": ${date}`,
      `"content-digest": ${digest}`,
      '"content-type": application/json; charset=UTF-8',
      `"@signature-params": ${params}`,
    ].join('\n');
    const signature = sign('sha256', Buffer.from(base), ec.privateKey).toString('base64');
    const headers = {
      'Content-Type': 'application/json; charset=UTF-8',
      'Content-Digest': digest,
      'Signature-Date': date,
      'Signature-Input': `sig-pp=${params}`,
      Signature: `sig-pp=:${signature}:`,
    };
    expect(check(headers, { url: 'https://PAY.example:443/network/pawapay/deposits?x=1' })).toEqual({
      valid: true,
      keyId: KEY_ID,
    });
  });

  test('a changed body is refused: by its digest, and by the signature when the digest is changed with it', () => {
    const tampered = BODY.replace('COMPLETED', 'FAILED');
    expect(reasonOf(check(signed(), { body: tampered }))).toBe('the Content-Digest does not match the body');
    const redigested = {
      ...signed(),
      'Content-Digest': `sha-512=:${createHash('sha512').update(tampered).digest('base64')}:`,
    };
    expect(reasonOf(check(redigested, { body: tampered }))).toBe('the signature does not verify');
  });

  test('another key, an unknown key id, another URL or a changed signature is refused', () => {
    const foreign = signCallback(
      { method: 'POST', url: URL_CALLED, body: BODY },
      { keyId: KEY_ID, privateKey: other.privateKey, now: NOW },
    );
    expect(reasonOf(check(foreign))).toBe('the signature does not verify');
    expect(reasonOf(check(signed({ keyId: 'HTTP_EC_P256_KEY:2' })))).toBe('unknown key id HTTP_EC_P256_KEY:2');
    expect(reasonOf(check(signed(), { url: 'https://pay.example/network/pawapay/payouts' }))).toBe(
      'the signature does not verify',
    );
    expect(reasonOf(check(signed(), { url: 'https://elsewhere.example/network/pawapay/deposits' }))).toBe(
      'the signature does not verify',
    );
    const headers = signed();
    const flipped = {
      ...headers,
      Signature: headers.Signature!.replace(/:(.)/, (_, first: string) => `:${first === 'A' ? 'B' : 'A'}`),
    };
    expect(reasonOf(check(flipped))).toBe('the signature does not verify');
  });

  test('a stale, future or expired signature is refused (replays); the age is configurable', () => {
    expect(reasonOf(check(signed(), { now: NOW + 6 * 60_000 }))).toBe(
      "the signature's Signature-Date is 360 s old (at most 300 s is taken)",
    );
    expect(reasonOf(check(signed(), { now: NOW - 5 * 60_000 }))).toBe(
      "the signature's Signature-Date is 300 s in the future",
    );
    expect(reasonOf(check(signed({ expiresInSeconds: 10 }), { now: NOW + 100_000 }))).toBe('the signature has expired');
    const headers = { ...signed(), 'Signature-Date': new Date(NOW + 2_000).toISOString() };
    expect(reasonOf(check(headers, { now: NOW + 2_000 }))).toBe('the signature does not verify');
    const lenient = verifySignedCallback(
      { method: 'POST', url: URL_CALLED, headers: new Headers(signed({ expiresInSeconds: 3600 })), rawBody: BODY },
      KEYS,
      { now: NOW + 20 * 60_000, maxAgeSeconds: 1800 },
    );
    expect(lenient.valid).toBe(true);
  });

  test('missing headers, an unsupported algorithm, too little covered or a malformed field is refused', () => {
    const { Signature: _signature, 'Signature-Date': _date, ...bare } = signed();
    expect(reasonOf(check(bare))).toBe('missing the Signature, Signature-Date headers');
    const headers = signed();
    expect(
      reasonOf(
        check({
          ...headers,
          'Signature-Input': headers['Signature-Input']!.replace('ecdsa-p256-sha256', 'hmac-sha256'),
        }),
      ),
    ).toBe('unsupported signature algorithm hmac-sha256');
    expect(
      reasonOf(
        check({
          ...headers,
          'Signature-Input': headers['Signature-Input']!.replace('ecdsa-p256-sha256', 'rsa-pss-sha512'),
        }),
      ),
    ).toBe('the key named does not fit the algorithm rsa-pss-sha512');
    expect(reasonOf(check(signed({ components: ['@method', '@authority', '@path', 'signature-date'] })))).toBe(
      'the signature does not cover content-digest',
    );
    expect(reasonOf(check({ ...headers, 'Signature-Input': 'sig-pp=("@method" "@path"' }))).toStartWith(
      'a signature header is malformed',
    );
    expect(reasonOf(check({ ...headers, 'Content-Digest': 'md5=:AAAA:' }))).toBe(
      'the Content-Digest has no sha-256 or sha-512 digest',
    );
    expect(reasonOf(check({ ...headers, 'Signature-Date': 'yesterday' }))).toBe('the Signature-Date is not a date');
  });

  test('RSA-PSS (rsa-pss-sha512) and RSA v1.5 (rsa-v1_5-sha256) keys verify too', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keys = parsePublicKeys([{ id: 'HTTP_RSA_KEY:1', key: pem(rsa.publicKey) }]);
    for (const algorithm of ['rsa-pss-sha512', 'rsa-v1_5-sha256'] as const) {
      const headers = signCallback(
        { method: 'POST', url: URL_CALLED, body: BODY },
        { keyId: 'HTTP_RSA_KEY:1', privateKey: rsa.privateKey, algorithm, now: NOW },
      );
      expect(check(headers, { keys })).toEqual({ valid: true, keyId: 'HTTP_RSA_KEY:1' });
    }
  });
});

describe('failure codes', () => {
  test("each code in a merchant's words; pawaPay's message only where ours say too little", () => {
    expect(pawapayFailure('PAYER_NOT_FOUND')).toBe('This number has no mobile money account on the chosen network.');
    expect(pawapayFailure('PAYMENT_NOT_APPROVED', 'Timeout')).toBe(
      'The customer did not approve the payment (declined it, or did not enter the PIN in time).',
    );
    expect(pawapayFailure('INSUFFICIENT_BALANCE')).toBe("The customer's mobile money balance is not enough.");
    expect(pawapayFailure('AMOUNT_OUT_OF_BOUNDS')).toBe(
      "The amount is outside this network's limits for this operation.",
    );
    expect(pawapayFailure('MANUALLY_CANCELLED')).toBe('The payment was cancelled at pawaPay before it was sent.');
    expect(pawapayFailure('INVALID_PARAMETER', 'amount:  must   match pattern')).toBe(
      'pawaPay refused the request as malformed; nothing was sent. (pawaPay: amount: must match pattern)',
    );
    expect(pawapayFailure('SOMETHING_NEW', 'details')).toBe(
      'pawaPay refused the transaction (SOMETHING_NEW: details).',
    );
    expect(pawapayFailure(undefined, 'no code')).toBe('pawaPay refused the transaction (no code).');
    expect(pawapayFailure()).toBe('pawaPay refused the transaction.');
    expect(pawapayFailure('OTHER_ERROR')).toBe(pawapayFailure('UNSPECIFIED_FAILURE'));
  });

  test('nothing happened (refuse), try again later, or only the status can tell', () => {
    for (const code of [
      'PAYER_NOT_FOUND',
      'RECIPIENT_NOT_FOUND',
      'INVALID_PHONE_NUMBER',
      'AMOUNT_OUT_OF_BOUNDS',
      'PAYMENT_NOT_APPROVED',
      'DEPOSITS_NOT_ALLOWED',
      'SOMETHING_NEW',
    ]) {
      expect(pawapayFailureAdvice(code)).toBe('refuse');
    }
    for (const code of [
      'PROVIDER_TEMPORARILY_UNAVAILABLE',
      'PAWAPAY_WALLET_OUT_OF_FUNDS',
      'PAYMENT_IN_PROGRESS',
      'UNSPECIFIED_FAILURE',
      'REFUND_IN_PROGRESS',
    ]) {
      expect(pawapayFailureAdvice(code)).toBe('retry-later');
    }
    expect(pawapayFailureAdvice('UNKNOWN_ERROR')).toBe('check-status');
    expect(pawapayFailureAdvice(undefined)).toBe('check-status');
  });
});

/** An active-conf answer of the documented shape: `operationTypes` keyed by operation, with minAmount/maxAmount. */
const ACTIVE_CONF = {
  companyName: 'Collections Ltd',
  signatureConfiguration: { signedRequestsOnly: false, signedCallbacks: true },
  countries: [
    {
      country: 'TZA',
      displayName: { en: 'Tanzania' },
      prefix: '255',
      flag: 'https://cdn.example/tza.svg',
      providers: [
        {
          provider: 'TIGO_TZA',
          displayName: 'Yas',
          logo: 'https://cdn.example/yas.png',
          nameDisplayedToCustomer: 'Collections Ltd',
          currencies: [
            {
              currency: 'TZS',
              displayName: 'TSh',
              operationTypes: {
                DEPOSIT: {
                  authType: 'PROVIDER_AUTH',
                  pinPrompt: 'AUTOMATIC',
                  minAmount: '100',
                  maxAmount: '1000000',
                  decimalsInAmount: 'NONE',
                  status: 'OPERATIONAL',
                },
                PAYOUT: { minAmount: '500', maxAmount: '5000000', decimalsInAmount: 'NONE', status: 'DELAYED' },
                REFUND: { minAmount: '100', maxAmount: '1000000', decimalsInAmount: 'NONE', status: 'CLOSED' },
              },
            },
          ],
        },
        {
          provider: 'HALOTEL_TZA',
          displayName: 'Halotel',
          currencies: [
            {
              currency: 'TZS',
              operationTypes: {
                DEPOSIT: { minAmount: '1000', maxAmount: '3000000', decimalsInAmount: 'NONE', status: 'OPERATIONAL' },
              },
            },
          ],
        },
      ],
    },
    {
      country: 'GHA',
      prefix: '233',
      providers: [
        {
          provider: 'VODAFONE_GHA',
          displayName: 'Telecel',
          // The reference's example form: a list, one entry keyed by the operation, others naming it, v1 limit names.
          currencies: [
            {
              currency: 'GHS',
              operationTypes: [
                {
                  DEPOSIT: {
                    minTransactionLimit: '1',
                    maxTransactionLimit: '2000',
                    decimalsInAmount: 'TWO_PLACES',
                    status: 'OPERATIONAL',
                  },
                },
                {
                  operationType: 'PAYOUT',
                  minTransactionLimit: '0.5',
                  maxTransactionLimit: '2000',
                  decimalsInAmount: 'TWO_PLACES',
                  status: 'OPERATIONAL',
                },
                { operationType: 'NAME_LOOKUP' },
              ],
            },
          ],
        },
      ],
    },
  ],
};

describe('active-conf limits', () => {
  const table: PawapayLimits = readActiveConf(ACTIVE_CONF);

  test("the documented shape, and the reference example's list form, read into one table", () => {
    expect(table.signedCallbacks).toBe(true);
    expect([...table.providers.keys()]).toEqual(['TIGO_TZA', 'HALOTEL_TZA', 'VODAFONE_GHA']);
    expect(table.providers.get('TIGO_TZA')!.currencies.get('TZS')).toEqual({
      DEPOSIT: { minAmount: '100', maxAmount: '1000000', decimals: 0, status: 'OPERATIONAL' },
      PAYOUT: { minAmount: '500', maxAmount: '5000000', decimals: 0, status: 'DELAYED' },
      REFUND: { minAmount: '100', maxAmount: '1000000', decimals: 0, status: 'CLOSED' },
    });
    expect(table.providers.get('VODAFONE_GHA')!.currencies.get('GHS')).toEqual({
      DEPOSIT: { minAmount: '1', maxAmount: '2000', decimals: 2, status: 'OPERATIONAL' },
      PAYOUT: { minAmount: '0.5', maxAmount: '2000', decimals: 2, status: 'OPERATIONAL' },
    });
    expect(readActiveConf('nonsense')).toEqual({ signedCallbacks: null, providers: new Map() });
  });

  test.each([
    ['TIGO_TZA', 'TZS', '1500', 'DEPOSIT', null],
    ['TIGO_TZA', 'TZS', '1500.0000', 'DEPOSIT', null],
    ['TIGO_TZA', 'TZS', '100', 'DEPOSIT', null],
    ['TIGO_TZA', 'TZS', '1000000', 'DEPOSIT', null],
    [
      'TIGO_TZA',
      'TZS',
      '50',
      'DEPOSIT',
      'Mixx by Yas (pawaPay) takes TZS 100 to 1,000,000 per deposit; TZS 50 is below the minimum.',
    ],
    [
      'TIGO_TZA',
      'TZS',
      '1000000.0001',
      'DEPOSIT',
      'Mixx by Yas (pawaPay) takes whole TZS amounts; 1000000.0001 has decimals.',
    ],
    [
      'TIGO_TZA',
      'TZS',
      '2500000',
      'DEPOSIT',
      'Mixx by Yas (pawaPay) takes TZS 100 to 1,000,000 per deposit; TZS 2,500,000 is above the maximum.',
    ],
    ['TIGO_TZA', 'TZS', '100.50', 'DEPOSIT', 'Mixx by Yas (pawaPay) takes whole TZS amounts; 100.50 has decimals.'],
    ['TIGO_TZA', 'TZS', '2000', 'PAYOUT', null],
    [
      'TIGO_TZA',
      'TZS',
      '200',
      'PAYOUT',
      'Mixx by Yas (pawaPay) takes TZS 500 to 5,000,000 per payout; TZS 200 is below the minimum.',
    ],
    [
      'TIGO_TZA',
      'TZS',
      '2000',
      'REFUND',
      'Mixx by Yas (pawaPay) is not taking refunds right now (pawaPay reports it closed); try again later.',
    ],
    ['TIGO_TZA', 'USD', '10', 'DEPOSIT', 'Mixx by Yas (pawaPay) does not take USD; it takes TZS.'],
    [
      'HALOTEL_TZA',
      'TZS',
      '5000',
      'PAYOUT',
      'HaloPesa (pawaPay) is not enabled for payouts in TZS on this pawaPay account.',
    ],
    ['AIRTEL_TZA', 'TZS', '5000', 'DEPOSIT', 'Airtel Money (pawaPay) is not enabled on this pawaPay account.'],
    ['VODAFONE_GHA', 'GHS', '10.25', 'DEPOSIT', null],
    ['VODAFONE_GHA', 'GHS', '10.2500', 'DEPOSIT', null],
    [
      'VODAFONE_GHA',
      'GHS',
      '10.255',
      'DEPOSIT',
      'Telecel Cash (pawaPay) takes GHS amounts with at most 2 decimals; 10.255 has more.',
    ],
    ['VODAFONE_GHA', 'GHS', '0.5', 'PAYOUT', null],
    [
      'VODAFONE_GHA',
      'GHS',
      '0.25',
      'PAYOUT',
      'Telecel Cash (pawaPay) takes GHS 0.5 to 2,000 per payout; GHS 0.25 is below the minimum.',
    ],
    [
      'VODAFONE_GHA',
      'GHS',
      '2000.01',
      'DEPOSIT',
      'Telecel Cash (pawaPay) takes GHS 1 to 2,000 per deposit; GHS 2,000.01 is above the maximum.',
    ],
    [
      'VODAFONE_GHA',
      'GHS',
      '1,000',
      'DEPOSIT',
      '1,000 is not an amount pawaPay takes (a positive number, like 1500 or 10.50).',
    ],
    [
      'VODAFONE_GHA',
      'GHS',
      '0',
      'DEPOSIT',
      '0 is not an amount pawaPay takes (a positive number, like 1500 or 10.50).',
    ],
  ] as const)('%s %s %s %s', (provider, currency, amount, operation, problem) => {
    expect(amountProblem(table, provider, currency, amount, operation)).toBe(problem);
  });

  test('amounts as pawaPay wants them: a string, no leading zeros, only the decimals that matter', () => {
    expect(formatAmount('1500.0000', 0)).toBe('1500');
    expect(formatAmount('1500', 0)).toBe('1500');
    expect(formatAmount('10.5000', 2)).toBe('10.5');
    expect(formatAmount('10.25', 2)).toBe('10.25');
    expect(formatAmount('0.50', 2)).toBe('0.5');
    expect(() => formatAmount('100.50', 0)).toThrow('more than 0 decimals');
    expect(() => formatAmount('10.255', 2)).toThrow('more than 2 decimals');
    expect(() => formatAmount('01', 0)).toThrow('not an amount');
  });
});

describe('pawaPay providers', () => {
  test('the five networks the connector serves, by pawaPay code', () => {
    const networkOf = (code: string) => PAWAPAY_PROVIDERS[code]?.network;
    expect(['TIGO_TZA', 'HALOTEL_TZA', 'VODAFONE_GHA', 'AIRTELTIGO_GHA', 'ORANGE_COD'].map(networkOf)).toEqual([
      'Tigo Tanzania',
      'Halotel',
      'Telecel Ghana',
      'AirtelTigo',
      'Orange DRC',
    ]);
    expect(PAWAPAY_PROVIDERS.ORANGE_COD).toMatchObject({
      country: 'CD',
      pawapayCountry: 'COD',
      currencies: ['CDF', 'USD'],
      name: 'Orange Money',
    });
  });

  test('every provider is a network the service knows, in its country and currencies', () => {
    for (const [code, provider] of Object.entries(PAWAPAY_PROVIDERS)) {
      const network = networkByName(provider.network);
      expect({
        code,
        network: network?.name,
        country: network?.country,
        currencies: (network ? currenciesOfNetwork(network) : []) as string[],
      }).toEqual({ code, network: provider.network, country: provider.country, currencies: [...provider.currencies] });
      expect(code.endsWith(`_${provider.pawapayCountry}`)).toBe(true);
    }
  });
});
