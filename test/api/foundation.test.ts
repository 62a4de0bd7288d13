import { beforeAll, describe, expect, test } from 'bun:test';
import { connect } from 'node:net';
import { createMerchant, requester, testApp, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
});

describe('authentication', () => {
  test.each([
    ['no header', {}],
    ['a wrong key', { Authorization: 'Token 0000000000000000000000000000000000000000' }],
    ['a malformed key', { Authorization: 'Token nope' }],
    ['another scheme', { Authorization: 'Basic dXNlcjpwYXNz' }],
  ])('%s gets 401 with WWW-Authenticate: Token', async (_name, headers) => {
    const response = await requester(ctx.app, null)('/api/contacts', { headers });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Invalid token.' });
    expect(response.headers.get('www-authenticate')).toBe('Token');
  });

  test('a valid key reaches the route', async () => {
    expect((await merchant.request('/api/contacts')).status).toBe(200);
  });

  test.each(['/api/nothing-here', '/api/contacts/1/nothing', '/api', '/api/v2/nothing-here', '/api/events/abc'])(
    'a missing or wrong key is 401 on %s, known path or not; a valid key gets past it',
    async (path) => {
      for (const headers of [{}, { Authorization: 'Token 0000000000000000000000000000000000000000' }] as Record<
        string,
        string
      >[]) {
        const response = await requester(ctx.app, null)(path, { headers });
        expect({ path, status: response.status, body: response.body }).toEqual({
          path,
          status: 401,
          body: { detail: 'Invalid token.' },
        });
        expect(response.headers.get('www-authenticate')).toBe('Token');
      }
      expect((await merchant.request(path)).status).toBe(404);
    },
  );

  test('a key of one organization cannot pass as another by sharing its prefix', async () => {
    const forged = `${merchant.apiKey.slice(0, 12)}${'0'.repeat(28)}`;
    const response = await requester(ctx.app, forged)('/api/contacts');
    expect(response.status).toBe(401);
  });
});

describe('errors', () => {
  test('unknown path is 404 with the API error body', async () => {
    const response = await merchant.request('/api/nothing-here');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: 'Not found.' });
  });

  test('a method the path does not allow is 405 with Allow', async () => {
    const response = await merchant.request('/api/events', { method: 'PUT', body: {} });
    expect(response.status).toBe(405);
    expect(response.body).toEqual({ detail: 'Method "PUT" not allowed.' });
    expect(response.headers.get('allow')).toBe('GET');
    const onItem = await merchant.request('/api/contacts/1/', { method: 'DELETE' });
    expect(onItem.status).toBe(405);
  });

  test('malformed JSON is 400, not 500', async () => {
    const response = await merchant.request('/api/contacts', { body: '{"first_name": ' });
    expect(response.status).toBe(400);
    expect(response.body.detail).toStartWith('JSON parse error');
  });

  test('a JSON body that is not an object is 400', async () => {
    const response = await merchant.request('/api/contacts', { body: '[1, 2]' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] });
  });

  test('an unsupported request media type is 415', async () => {
    const response = await merchant.request('/api/contacts', {
      body: '<contact/>',
      headers: { 'Content-Type': 'application/xml' },
    });
    expect(response.status).toBe(415);
    expect(response.body).toEqual({ detail: 'Unsupported media type "application/xml" in request.' });
  });

  test.each(['text/html', 'application/xml', 'application/json;q=0'])('Accept: %s is 406', async (accept) => {
    const response = await merchant.request('/api/contacts', { headers: { Accept: accept } });
    expect(response.status).toBe(406);
    expect(response.body).toEqual({ detail: 'Could not satisfy the request Accept header.' });
  });

  test.each(['application/json', '*/*', 'text/html, application/json;q=0.9', 'application/*'])(
    'Accept: %s is served',
    async (accept) => {
      expect((await merchant.request('/api/contacts', { headers: { Accept: accept } })).status).toBe(200);
    },
  );

  test('an oversized body is 413', async () => {
    const response = await merchant.request('/api/contacts', { body: { first_name: 'x'.repeat(1_100_000) } });
    expect(response.status).toBe(413);
  });

  // Found by the fuzz test (test/api/fuzz.test.ts): PostgreSQL refuses NUL in text and jsonb, and an
  // unpaired surrogate in jsonb, so these reached a query and came back as 500.
  test.each([
    ['a filter', '/api/contacts?first_name=a%00b', {}, { first_name: ['Null characters are not allowed.'] }],
    [
      'a filter of another list',
      '/api/collectionrequests?reason=%00',
      {},
      { reason: ['Null characters are not allowed.'] },
    ],
    [
      'a JSON field',
      '/api/contacts',
      { body: { phone_number: '+256772000101', first_name: 'a\u0000b', last_name: 'B' } },
      { first_name: ['Null characters are not allowed.'] },
    ],
    [
      'a form field',
      '/api/contacts',
      { form: { phone_number: '+256772000102', first_name: 'A', last_name: 'B\u0000' } },
      { last_name: ['Null characters are not allowed.'] },
    ],
    [
      'a nested metadata value',
      '/api/contacts',
      { body: { phone_number: '+256772000103', first_name: 'A', last_name: 'B', metadata: { note: ['x\u0000'] } } },
      { metadata: ['Null characters are not allowed.'] },
    ],
    [
      'an unpaired surrogate in metadata (jsonb)',
      '/api/contacts',
      {
        body: '{"phone_number": "+256772000104", "first_name": "A", "last_name": "B", "metadata": {"note": "\\ud800"}}',
      },
      { metadata: ['Surrogate characters are not allowed: U+D800.'] },
    ],
    [
      'an unpaired surrogate in a metadata key',
      '/api/collectionrequests',
      { body: '{"phonenumber": "+80000000009", "amount": "1", "currency": "BXC", "metadata": {"\\udfff": 1}}' },
      { metadata: ['Surrogate characters are not allowed: U+DFFF.'] },
    ],
    [
      'an unpaired surrogate in a text field',
      '/api/contacts',
      { body: '{"phone_number": "+256772000105", "first_name": "A\\udbff", "last_name": "B"}' },
      { first_name: ['Surrogate characters are not allowed: U+DBFF.'] },
    ],
  ] as const)('text PostgreSQL cannot store is 400 with the field, not 500: %s', async (_, path, options, errors) => {
    const response = await merchant.request(path, options);
    expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: errors });
  });

  test('paired surrogates (emoji) are ordinary text', async () => {
    const response = await merchant.request('/api/contacts', {
      body: { phone_number: '+256772000106', first_name: 'A 😀', last_name: 'B', metadata: { mood: '😀' } },
    });
    expect(response.status).toBe(201);
    expect(response.body.first_name).toBe('A 😀');
    expect(response.body.metadata).toEqual({ mood: '😀' });
  });

  test('a non-numeric id is 404', async () => {
    expect((await merchant.request('/api/contacts/abc')).status).toBe(404);
    expect((await merchant.request('/api/events/99999999999999999999')).status).toBe(404);
  });
});

describe('what an error repeats of its input', () => {
  const huge = `Z${'abcdefghij'.repeat(200_000)}`; // 2 MB on one line
  const isBounded = (body: unknown) => {
    const text = JSON.stringify(body);
    // A few dozen characters of the input at most, and a short answer however large the input.
    return text.length < 2_000 && !text.includes(huge.slice(0, 80));
  };

  test('a 2 MB one-line CSV is refused quoting a few dozen characters of it', async () => {
    const answer = await merchant.request('/api/payment-batches', {
      body: huge,
      headers: { 'Content-Type': 'text/csv' },
    });
    expect(answer.status).toBe(400);
    expect(isBounded(answer.body)).toBe(true);
    // The header row is read in lower case: the refusal names the column it could not place.
    expect(JSON.stringify(answer.body)).toContain(huge.slice(0, 20).toLowerCase());
  });

  test('huge field values, unknown fields and media types come back cut', async () => {
    const long = huge.slice(0, 900_000);
    const answers = await Promise.all([
      merchant.request('/api/contacts', { body: { phone_number: long, first_name: long, last_name: long } }),
      merchant.request('/api/collectionrequests', {
        body: { phonenumber: long, amount: long, currency: long, [long]: 1 },
      }),
      merchant.request('/api/payments', {
        body: { phonenumber: '+256772000001', amount: '1', currency: 'BXC', description: long },
      }),
      merchant.request('/api/contacts', {
        body: '{}',
        headers: { 'Content-Type': `application/${long.slice(0, 6_000)}` },
      }),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(isBounded(answer.body)).toBe(true);
    }
  });
});

describe('response headers', () => {
  test('every API answer, success or error, says nosniff and no-store', async () => {
    const answers = [
      await merchant.request('/api/contacts'),
      await merchant.request('/api/contacts', { body: {} }),
      await requester(ctx.app, null)('/api/contacts'),
      await merchant.request('/api/nothing-here'),
      await requester(ctx.app, null)('/network/payments', { body: {} }),
      await requester(ctx.app, null)('/healthz'),
    ];
    for (const answer of answers) {
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('cache-control')).toBe('no-store');
    }
  });

  test('/openapi may not be framed and runs only its own scripts', async () => {
    const page = await ctx.app.handle(new Request('http://localhost/openapi', { headers: { Accept: 'text/html' } }));
    expect(page.status).toBe(200);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const policy = page.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("script-src 'self';");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(await page.text()).not.toMatch(/<script>/);
  });
});

describe('paths', () => {
  test.each(['/api/contacts', '/api/contacts/', '/api/events', '/api/events/'])(
    '%s answers with and without a trailing slash',
    async (path) => {
      expect((await merchant.request(path)).status).toBe(200);
    },
  );
});

describe('query strings', () => {
  /** What a real Bun server answers to a request line sent as raw bytes (a client library may send them unencoded). */
  async function rawRequest(target: Uint8Array): Promise<{ status: number; body: string }> {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => ctx.app.handle(request) });
    try {
      const head = new TextEncoder().encode(
        ` HTTP/1.1\r\nHost: localhost\r\nAuthorization: Token ${merchant.apiKey}\r\nConnection: close\r\n\r\n`,
      );
      const answer = await new Promise<string>((resolve, reject) => {
        // Written, not ended: a client that half-closes its side may see the request aborted. The server closes (Connection: close).
        const socket = connect(server.port!, '127.0.0.1', () =>
          socket.write(Buffer.concat([Buffer.from('GET '), target, head])),
        );
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString('utf8')));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      return {
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]),
        body: answer.slice(answer.indexOf('\r\n\r\n') + 4),
      };
    } finally {
      server.stop(true);
    }
  }

  test('a byte that is not UTF-8 is 400 whether it comes raw (0xFF) or percent-encoded (%FF); valid text passes both ways', async () => {
    const path = (...parts: (string | number[])[]) =>
      Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));
    const raw = await rawRequest(path('/api/contacts?first_name=A', [0xff], 'B'));
    const encoded = await rawRequest(path('/api/contacts?first_name=A%FFB'));
    for (const answer of [raw, encoded]) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toEqual({ detail: 'The query string holds bytes that are not valid UTF-8.' });
    }
    expect((await rawRequest(path('/api/contacts?first_name=', [0xc3, 0xa9]))).status).toBe(200);
    expect((await rawRequest(path('/api/contacts?first_name=%C3%A9'))).status).toBe(200);
  });
});

describe('/healthz', () => {
  test('reports PostgreSQL and Temporal without auth', async () => {
    const response = await requester(ctx.app, null)('/healthz');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', postgres: 'ok', temporal: 'ok' });
  });
});
