import { describe, expect, test } from 'bun:test';
import { acceptsJson, createMethodIndex, nestFormFields, parseRequestBody } from '../../src/api/http';
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
