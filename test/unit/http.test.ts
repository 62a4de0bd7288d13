import { describe, expect, test } from 'bun:test';
import {
  acceptsJson,
  createMethodIndex,
  errorResponse,
  nestFormFields,
  parseRequestBody,
} from '../../src/http/request';
import { isDatabaseUnavailable } from '../../src/db';
import type { ApiError } from '../../src/http/errors';
import { throttledAddress } from '../../src/http/client-address';
import { pagedList } from '../../src/http/pagination';

describe('Accept', () => {
  test.each([
    null,
    '',
    '*/*',
    'application/json',
    'application/json; charset=utf-8',
    'text/html,*/*;q=0.8',
    'application/*',
  ])('%p admits JSON', (header) => {
    expect(acceptsJson(header)).toBe(true);
  });
  test.each(['text/html', 'application/xml', 'application/json;q=0', 'text/*'])('%p does not', (header) => {
    expect(acceptsJson(header)).toBe(false);
  });
});

describe('form bodies', () => {
  test('dotted and bracketed keys nest; [] and repeats make lists', () => {
    expect(
      nestFormFields([
        ['a', '1'],
        ['metadata.x', '2'],
        ['metadata[y]', '3'],
        ['weekdays[]', 'mon'],
        ['weekdays[]', 'tue'],
        ['tag', 'p'],
        ['tag', 'q'],
      ]),
    ).toEqual({ a: '1', metadata: { x: '2', y: '3' }, weekdays: ['mon', 'tue'], tag: ['p', 'q'] });
  });

  const request = (body: string, contentType?: string) =>
    new Request('http://localhost/x', {
      method: 'POST',
      body,
      headers: contentType ? { 'Content-Type': contentType } : {},
    });

  test('parses JSON, form and multipart; empty is {}', async () => {
    expect(await parseRequestBody(request('{"a":1}', 'application/json; charset=utf-8'))).toEqual({ a: 1 });
    expect(await parseRequestBody(request('a=1&m.k=v', 'application/x-www-form-urlencoded'))).toEqual({
      a: '1',
      m: { k: 'v' },
    });
    const form = new FormData();
    form.set('metadata[k]', 'v');
    expect(await parseRequestBody(new Request('http://localhost/x', { method: 'POST', body: form }))).toEqual({
      metadata: { k: 'v' },
    });
    expect(await parseRequestBody(request('', 'application/json'))).toEqual({});
  });

  test('rejects what it cannot read with the right status', async () => {
    const status = async (promise: Promise<unknown>) =>
      promise.then(
        () => 200,
        (error: ApiError) => error.status,
      );
    expect(await status(parseRequestBody(request('{', 'application/json')))).toBe(400);
    expect(await status(parseRequestBody(request('"text"', 'application/json')))).toBe(400);
    expect(await status(parseRequestBody(request('a', 'text/plain')))).toBe(415);
  });

  const status = async (promise: Promise<unknown>) =>
    promise.then(
      () => 200,
      (error: ApiError) => error.status,
    );
  /** A body sent in chunks with no Content-Length, as a streaming client would. */
  const chunked = (chunks: Uint8Array[], contentType: string) =>
    new Request('http://localhost/x', {
      method: 'POST',
      headers: { 'Content-Type': contentType },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);

  test('the size limit counts bytes as they stream, whatever the encoding: 413 past 1 MiB', async () => {
    const megabyte = new TextEncoder().encode('a'.repeat(512 * 1024));
    const form = (count: number) => [
      new TextEncoder().encode('first_name='),
      ...Array.from({ length: count }, () => megabyte.slice()),
    ];
    expect(await status(parseRequestBody(chunked(form(1), 'application/x-www-form-urlencoded')))).toBe(200);
    expect(await status(parseRequestBody(chunked(form(40), 'application/x-www-form-urlencoded')))).toBe(413);
    const boundary = 'b0undary';
    const multipart = [
      new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="first_name"\r\n\r\n`),
      ...Array.from({ length: 40 }, () => megabyte.slice()),
      new TextEncoder().encode(`\r\n--${boundary}--\r\n`),
    ];
    expect(await status(parseRequestBody(chunked(multipart, `multipart/form-data; boundary=${boundary}`)))).toBe(413);
    expect(await status(parseRequestBody(request('{"a":"b"}'.padEnd(2_000_000, ' '), 'application/json')))).toBe(413);
  });

  test('bytes that are not UTF-8 are 400, never stored as U+FFFD', async () => {
    const bytes = (...parts: (string | number[])[]) => {
      const encoded = parts.map((part) =>
        typeof part === 'string' ? new TextEncoder().encode(part) : new Uint8Array(part),
      );
      const all = new Uint8Array(encoded.reduce((size, part) => size + part.length, 0));
      let offset = 0;
      for (const part of encoded) {
        all.set(part, offset);
        offset += part.length;
      }
      return all;
    };
    expect(
      await status(parseRequestBody(chunked([bytes('{"first_name":"', [0xff, 0xfe], '"}')], 'application/json'))),
    ).toBe(400);
    const boundary = 'b0undary';
    const multipart = bytes(
      `--${boundary}\r\nContent-Disposition: form-data; name="first_name"\r\n\r\n`,
      [0xc3, 0x28],
      `\r\n--${boundary}--\r\n`,
    );
    expect(await status(parseRequestBody(chunked([multipart], `multipart/form-data; boundary=${boundary}`)))).toBe(400);
    expect(await status(parseRequestBody(request('first_name=%FF%FE', 'application/x-www-form-urlencoded')))).toBe(400);
    expect(await parseRequestBody(request('first_name=%C3%A9+x', 'application/x-www-form-urlencoded'))).toEqual({
      first_name: 'é x',
    });
    expect(await parseRequestBody(request('{"first_name":"\uFFFD"}', 'application/json'))).toEqual({
      first_name: '\uFFFD',
    });
  });

  test('JSON nested deeper than the limit is 400, found by a scan instead of a recursive walk', async () => {
    const deep = `{"metadata":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    expect(await status(parseRequestBody(request(deep, 'application/json')))).toBe(400);
    expect(
      await parseRequestBody(request(`{"a":${'['.repeat(20)}${']'.repeat(20)}}`, 'application/json')),
    ).toBeDefined();
  });
});

describe('405 detection', () => {
  test('matches parameterised routes with or without a trailing slash', () => {
    const allowed = createMethodIndex(() => [
      { method: 'GET', path: '/api/things' },
      { method: 'POST', path: '/api/things' },
      { method: 'GET', path: '/api/things/:id' },
    ]);
    expect(allowed('/api/things/')).toEqual(['GET', 'POST']);
    expect(allowed('/api/things/12')).toEqual(['GET']);
    expect(allowed('/api/others')).toEqual([]);
  });
});

describe('paged envelope', () => {
  test('honours a public base URL', () => {
    const page = pagedList(
      new Request('http://internal:8000/api/x?limit=2'),
      'https://api.example.com',
      { limit: 2, offset: 0, limitGiven: true },
      5,
      [1, 2],
    );
    expect(page.next).toBe('https://api.example.com/api/x?limit=2&offset=2');
  });
});

describe('PostgreSQL unavailable', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  test.each([
    withCode('ECONNREFUSED'),
    withCode('CONNECTION_CLOSED'),
    withCode('CONNECT_TIMEOUT'),
    withCode('57P01'),
    withCode('08006'),
    withCode('53300'),
    withCode('55000', 'database "c" is not currently accepting connections'),
    new Error('wrapped', { cause: withCode('CONNECTION_ENDED') }),
  ])('%p is a transient outage: 503 with Retry-After', (error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
    const response = errorResponse('UNKNOWN', error, new Request('http://localhost/api/contacts'), () => []);
    expect(response.status).toBe(503);
    expect(response.headers.get('Retry-After')).toBe('5');
  });
  test.each([withCode('23505'), withCode('55000', 'sequence not yet defined'), new Error('plain'), 'text'])(
    '%p is not',
    (error) => {
      expect(isDatabaseUnavailable(error)).toBe(false);
    },
  );
});

describe('addresses a throttle counts by', () => {
  test.each([
    ['192.0.2.7', '192.0.2.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002::9', '2001:db8:1:2::/64'],
    ['[2001:db8:1:2::1]', '2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['0:0:0:0:0:ffff:c000:207', '192.0.2.7'],
    ['64:ff9b::192.0.2.7', '64:ff9b:0:0::/64'],
    ['unknown', 'unknown'],
    ['1:2:3', '1:2:3'],
    ['1::2::3', '1::2::3'],
  ])('%p counts as %p', (address, counted) => {
    expect(throttledAddress(address)).toBe(counted);
  });

  test('anything else is kept, cut to a bounded length', () => {
    expect(throttledAddress('x'.repeat(500))).toHaveLength(100);
  });
});
