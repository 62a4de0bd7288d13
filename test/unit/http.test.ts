import { describe, expect, test } from 'bun:test';
import { acceptsJson, createMethodIndex, errorResponse, nestFormFields, parseRequestBody } from '../../src/api/http';
import { isDatabaseUnavailable } from '../../src/db';
import { ApiError } from '../../src/api/errors';
import { pagedList } from '../../src/api/pagination';

describe('Accept', () => {
  test.each([null, '', '*/*', 'application/json', 'application/json; charset=utf-8', 'text/html,*/*;q=0.8', 'application/*'])('%p admits JSON', (header) => {
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
    new Request('http://localhost/x', { method: 'POST', body, headers: contentType ? { 'Content-Type': contentType } : {} });

  test('parses JSON, form and multipart; empty is {}', async () => {
    expect(await parseRequestBody(request('{"a":1}', 'application/json; charset=utf-8'))).toEqual({ a: 1 });
    expect(await parseRequestBody(request('a=1&m.k=v', 'application/x-www-form-urlencoded'))).toEqual({ a: '1', m: { k: 'v' } });
    const form = new FormData();
    form.set('metadata[k]', 'v');
    expect(await parseRequestBody(new Request('http://localhost/x', { method: 'POST', body: form }))).toEqual({ metadata: { k: 'v' } });
    expect(await parseRequestBody(request('', 'application/json'))).toEqual({});
  });

  test('rejects what it cannot read with the right status', async () => {
    const status = async (promise: Promise<unknown>) => promise.then(() => 200, (error: ApiError) => error.status);
    expect(await status(parseRequestBody(request('{', 'application/json')))).toBe(400);
    expect(await status(parseRequestBody(request('"text"', 'application/json')))).toBe(400);
    expect(await status(parseRequestBody(request('a', 'text/plain')))).toBe(415);
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
    const page = pagedList(new Request('http://internal:8000/api/x?limit=2'), 'https://api.example.com', { limit: 2, offset: 0, limitGiven: true }, 5, [1, 2]);
    expect(page.next).toBe('https://api.example.com/api/x?limit=2&offset=2');
  });
});

describe('PostgreSQL unavailable', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  test.each([
    withCode('ECONNREFUSED'), withCode('CONNECTION_CLOSED'), withCode('CONNECT_TIMEOUT'), withCode('57P01'), withCode('08006'),
    withCode('53300'), withCode('55000', 'database "c" is not currently accepting connections'),
    new Error('wrapped', { cause: withCode('CONNECTION_ENDED') }),
  ])('%p is a transient outage: 503 with Retry-After', (error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
    const response = errorResponse('UNKNOWN', error, new Request('http://localhost/api/contacts'), () => []);
    expect(response.status).toBe(503);
    expect(response.headers.get('Retry-After')).toBe('5');
  });
  test.each([withCode('23505'), withCode('55000', 'sequence not yet defined'), new Error('plain'), 'text'])('%p is not', (error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
