/**
 * Bad input, property-based (fast-check): malformed, oversized, wrongly typed and injection-laden
 * requests to every route the app serves (`app.routes`, so routes added later are covered without
 * being listed here), through `app.handle` against the real database. For every request:
 *   - no 5xx, and no stack trace or SQL in the answer;
 *   - a refused request (4xx) changed no row of any table (the throttle counter aside, which counts
 *     every authenticated request by design);
 *   - a path naming another organization's object is never answered below 400, no answer carries
 *     anything of the other organization (its objects hold a marker string), and at the end none of
 *     its rows has changed.
 * CI runs a bounded number of requests with a fixed seed, so every run sends the same ones;
 * FUZZ_RUNS=50000 FUZZ_SEED=<n> sends more, or others, on demand (the failure report names the seed).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import fc from 'fast-check';
import { METRICS_PATH } from '../../src/api/metrics';
import { DOCS_PATH, DOCS_SCRIPT_PATH } from '../../src/api/openapi';
import { isConsolePath } from '../../src/console';
import { BASE_URL, createMerchant, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';
import { prepareContracts } from '../openapi-contract';

const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);
const SEED = Number(process.env.FUZZ_SEED ?? 7_2025);
/** Tables a refused request may still write: the throttle windows count every authenticated request and every operator callback. */
const WRITTEN_BY_EVERY_REQUEST = new Set(['request_counters', 'schema_migrations']);
const MARKER = `zqxforeign${Date.now().toString(36)}`;

let ctx: TestApp;
let own: TestMerchant;
let foreign: TestMerchant;
/** Ids of each organization's rows, per table with `organization_id`, to put in paths. */
let idsByTable = new Map<string, { own: string[]; foreign: string[] }>();
let foreignIds: string[] = [];
let ownEventId = '';
let tables: { name: string; byOrganization: boolean }[] = [];
const statuses = new Map<number, number>();

type Fingerprint = Record<string, string>;

/**
 * Row count and a hash of every row's text, per table: rows of the two fuzz organizations where a
 * table has `organization_id` (others may grow while other files run), whole tables otherwise.
 */
async function fingerprint(
  organizationIds: number[] = [own.organization.id, foreign.organization.id],
): Promise<Fingerprint> {
  const sql = testSql();
  const parts = tables.map(({ name, byOrganization }) => {
    // Receivers are shared and their health changes with other files' deliveries: those of the two organizations' webhooks.
    const where =
      name === 'organizations'
        ? sql`where t.id in ${sql(organizationIds)}`
        : name === 'webhook_receivers'
          ? sql`where t.origin in (select receiver from webhooks where organization_id in ${sql(organizationIds)})`
          : byOrganization
            ? sql`where t.organization_id in ${sql(organizationIds)}`
            : sql``;
    return sql`select ${name}::text as name, count(*)::text || ':' || coalesce(sum(hashtext(t::text)::bigint), 0)::text as print
               from ${sql(name)} t ${where}`;
  });
  const union = parts.reduce((all, part) => sql`${all} union all ${part}`);
  const rows = await sql<{ name: string; print: string }[]>`${union}`;
  return Object.fromEntries(rows.map((row) => [row.name, row.print]));
}

beforeAll(async () => {
  ctx = await testApp();
  // Every answer is checked against the OpenAPI document (testApp): its validators are made now, outside the timed requests.
  await prepareContracts(ctx.app);
  own = await createMerchant(ctx.app, `Fuzz Own ${Date.now()}`);
  foreign = await createMerchant(ctx.app, `Fuzz ${MARKER}`);
  const sql = testSql();
  tables = await sql<{ name: string; byOrganization: boolean }[]>`
    select table_name as name, bool_or(column_name = 'organization_id') as "byOrganization"
    from information_schema.columns where table_schema = 'public' and table_name not in ${sql([...WRITTEN_BY_EVERY_REQUEST])}
    group by table_name order by table_name`;

  // Each organization owns one object of every kind; the other's carry the marker everywhere.
  async function objects(merchant: TestMerchant, marker: string, phone: string): Promise<void> {
    const contact = await merchant.request('/api/contacts', {
      body: {
        phone_number: phone,
        first_name: marker,
        last_name: marker,
        email: `${marker}@example.com`,
        metadata: { note: marker },
      },
    });
    const webhook = await merchant.request('/api/webhooks', {
      body: { event: 'contact.created', target: `https://${marker}.example.com/hook` },
    });
    const request = await merchant.request('/api/collectionrequests', {
      body: {
        phonenumber: '+80000000009',
        amount: '12.5',
        currency: 'BXC',
        reason: marker,
        metadata: { note: marker },
      },
    });
    const events = await merchant.request('/api/events');
    for (const response of [contact, webhook, request, events]) expect(response.status).toBeLessThan(300);
    if (merchant === own) ownEventId = String(events.body.results[0].id);
  }
  await objects(own, 'FuzzOwn', '+256772100001');
  await objects(foreign, MARKER, '+256772100002');
  idsByTable = new Map();
  for (const { name } of tables.filter((table) => table.byOrganization)) {
    const hasId =
      await sql`select 1 from information_schema.columns where table_schema = 'public' and table_name = ${name} and column_name = 'id'`;
    if (hasId.length === 0) continue;
    const ids = async (organizationId: number) =>
      (
        await sql<
          { id: string }[]
        >`select id::text as id from ${sql(name)} where organization_id = ${organizationId} order by id limit 5`
      ).map((row) => row.id);
    idsByTable.set(name, { own: await ids(own.organization.id), foreign: await ids(foreign.organization.id) });
  }
  foreignIds = [...idsByTable.values()].flatMap((ids) => ids.foreign);
  expect(idsByTable.get('contacts')?.foreign.length).toBeGreaterThan(0);
});

/** The table a path parameter names: the segment before it (`/api/collectionrequests/:id` → collection_requests). */
function tableOfParameter(routePath: string, parameterIndex: number): string | undefined {
  const segments = routePath.split('/');
  const positions = segments.flatMap((segment, index) => (segment.startsWith(':') ? [index] : []));
  const resource = segments[(positions[parameterIndex] ?? 0) - 1] ?? '';
  return [...idsByTable.keys()].find((table) => table.replaceAll('_', '') === resource);
}

afterAll(() => {
  const summary = [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
  process.stdout.write(`fuzz: ${RUNS} requests, seed ${SEED}; statuses ${summary}\n`);
});

// ---------------------------------------------------------------------------------------------
// Generators

const INJECTIONS = [
  "' or '1'='1",
  "1' or 1=1 --",
  "'; drop table contacts; --",
  '1; select pg_sleep(5)',
  '" or ""="',
  '\\',
  "\\'",
  '%',
  '_',
  '%%',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template injection attempt, sent as text
  '${7*7}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '..%2f..%2f',
  '\u0000',
  'a\u0000b',
  '%00',
  '\u202e',
  '\ud800',
  '\uffff',
  '😀',
  'ﷺ',
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '1e309',
  '0x1f',
  '0b1',
  '1_000',
  '1,000',
  ' 10 ',
  '+1',
  '-1',
  '0',
  '00001',
  '9007199254740993',
  '99999999999999999999999',
  '1.00000000001',
  'null',
  'undefined',
  'true',
  'false',
  '[]',
  '{}',
  '[object Object]',
  '__proto__',
  'constructor',
  'tomorrow',
  '31/02/2025',
  '2025-13-45 25:61',
  '9999-12-31 23:59',
  '0000-00-00',
  '-1 minutes',
  '100000000 weeks',
  '999999 weeks',
  '31/12/9999 23:59:59',
  '01/01/2100',
  '31/12/2099 23:59:59',
  '9999999999999999.9999',
  '1000000000.0001',
  '1000000000',
  '+40 712 345 678',
  '+33 6 12 34 56 78',
  'https:///x',
  'https://a.example/\r\nX: 1',
  'https://[64:ff9b::a00:1]/',
  'https://[2002:c0a8:101::1]/',
  '+256772123456',
  '+80000000001',
  '+80000000009',
  '256772123456',
  '+1',
  '+',
  'BXC',
  'bxc',
  'XXX',
  'contact.created',
  'https://example.com/x',
  'http://127.0.0.1/',
  'https://[::1]/',
  'https://user:pass@example.com/',
  'javascript:alert(1)',
  'file:///etc/passwd',
];

const printable = fc
  .integer({ min: 0x20, max: 0xff })
  .filter((code) => code !== 0x7f)
  .map((code) => String.fromCharCode(code));
/** A header value the fetch Headers class accepts (no CR, LF or NUL). */
const headerText = (maxLength: number) => fc.string({ unit: printable, maxLength });

/** Characters that trip parsers, encoders and PostgreSQL (NUL, unpaired surrogates, quotes, separators). */
const AWKWARD_CHARACTERS = [
  '\u0000',
  '\ud800',
  '\udfff',
  '\u202e',
  '\uffff',
  '\ufeff',
  '\u2028',
  "'",
  '"',
  '\\',
  '%',
  '\n',
  '\r',
  '\t',
  '😀',
  '&',
  '=',
  '[',
  ']',
  '.',
];

const evilString = fc.oneof(
  { arbitrary: fc.constantFrom(...INJECTIONS), weight: 4 },
  {
    arbitrary: fc
      .tuple(fc.string({ maxLength: 8 }), fc.constantFrom(...AWKWARD_CHARACTERS), fc.string({ maxLength: 8 }))
      .map((parts) => parts.join('')),
    weight: 3,
  },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 1 },
  {
    arbitrary: fc
      .constantFrom(...INJECTIONS)
      .chain((s) => fc.integer({ min: 50, max: 3000 }).map((n) => s.repeat(n).slice(0, 70_000))),
    weight: 1,
  },
);

const evilScalar = fc.oneof(
  { arbitrary: evilString, weight: 6 },
  { arbitrary: fc.integer(), weight: 1 },
  { arbitrary: fc.constantFrom(0, -1, 1.5, 1e21, -1e21, 2 ** 53 + 1, Number.MAX_VALUE, 1e-7), weight: 1 },
  { arbitrary: fc.boolean(), weight: 1 },
  { arbitrary: fc.constant(null), weight: 1 },
);

const { value: evilValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: evilScalar, weight: 8 },
    { arbitrary: fc.array(tie('value'), { maxLength: 4 }), weight: 1 },
    { arbitrary: fc.dictionary(evilString, tie('value'), { maxKeys: 4 }), weight: 1 },
  ),
}));

const FIELD_NAMES = [
  'phone_number',
  'phonenumber',
  'first_name',
  'last_name',
  'email',
  'type',
  'metadata',
  'amount',
  'currency',
  'account',
  'reason',
  'success_message',
  'send_instructions',
  'instructions',
  'expiry_date',
  'start_date',
  'retry_interval_minutes',
  'max_attempts',
  'subscription_settings',
  'event',
  'target',
  'service_type',
  'id',
  'organization',
  'user',
  'status',
  'collection',
  'created',
  'network',
  'remote_transaction_id',
  '__proto__',
  'constructor',
  'prototype',
];
const fieldName = fc.oneof(
  { arbitrary: fc.constantFrom(...FIELD_NAMES), weight: 5 },
  { arbitrary: evilString, weight: 1 },
);

/** A body one step from valid for the route it goes to, so requests reach past the first check. */
function nearlyValid(path: string, serial = 0): Record<string, unknown> {
  if (path.startsWith('/api/contacts'))
    return { phone_number: `+256772${String(serial).padStart(6, '0')}`, first_name: 'Fuzz', last_name: 'Case' };
  if (path.startsWith('/api/collectionrequests')) return { phonenumber: '+80000000009', amount: '10', currency: 'BXC' };
  if (path.endsWith('/deliveries')) return { event: ownEventId };
  if (path.startsWith('/api/webhooks')) return { event: 'contact.created', target: 'https://fuzz.example.com/hook' };
  if (path.startsWith('/api/bills')) return { service_type: 'mtn' };
  return {};
}

/** Thousands of levels of arrays or objects: recursive code overflows its stack on them. */
const deeplyNested = fc.tuple(fc.integer({ min: 1000, max: 20_000 }), fc.boolean()).map(([depth, arrays]) => {
  let value: unknown = 'deep';
  for (let level = 0; level < depth; level += 1) value = arrays ? [value] : { a: value };
  return value;
});

const fields = fc.dictionary(fieldName, evilValue, { maxKeys: 8 });
type Fields = Record<string, unknown>;
const bodyFields = (path: string) =>
  fc.oneof(
    fields,
    // One field of a valid body replaced: the request reaches the database with that one value.
    fc
      .tuple(
        fc.oneof(fc.constantFrom(...Object.keys(nearlyValid(path)), 'metadata'), fc.constantFrom(...FIELD_NAMES)),
        fc.oneof(evilScalar, fc.dictionary(evilString, evilScalar, { maxKeys: 3 }), deeplyNested),
        fc.integer({ min: 200_000, max: 999_999 }),
      )
      .map(([name, value, serial]): Fields => ({ ...nearlyValid(path, serial), [name]: value })),
    fc.tuple(fields, fc.subarray(Object.keys(nearlyValid(path)))).map(([changes, dropped]): Fields => {
      const body: Fields = { ...nearlyValid(path), ...changes };
      for (const name of dropped) delete body[name];
      return body;
    }),
  );

/** Form fields: nested keys as the API reads them (`a.b`, `a[b]`, `a[]`), values always text. */
const formPairs = (path: string) =>
  fc
    .tuple(
      bodyFields(path),
      fc.array(
        fc.tuple(fc.constantFrom('metadata[', 'metadata.', 'subscription_settings.', 'a[]', '[', ']', '.'), evilString),
        { maxLength: 3 },
      ),
    )
    .map(([body, nested]) => [
      ...Object.entries(body).map(([key, value]): [string, string] => [
        key,
        typeof value === 'string' ? value : (JSON.stringify(value) ?? ''),
      ]),
      ...nested.map(([prefix, key]): [string, string] => [`${prefix}${key}`, key]),
    ]);

const CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=',
  'text/plain',
  'application/xml',
  '',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/octet-stream',
  'application/json, text/plain',
  '*/*',
  ';',
  'multipart/mixed; boundary=x',
];

type Body = { body?: string | FormData | Uint8Array | (() => ReadableStream<Uint8Array>); contentType?: string };
const MAX_BODY = 1_048_576;

const utf8 = (text: string) => new TextEncoder().encode(text);
const concat = (...parts: Uint8Array[]) => {
  const all = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.length;
  }
  return all;
};
/** A body streamed in 64 KiB chunks with no Content-Length (chunked on the wire), made lazily. */
const streamed =
  (head: Uint8Array, totalBytes: number, tail: Uint8Array = new Uint8Array(0)) =>
  () => {
    let sent = 0;
    const chunk = new Uint8Array(65_536).fill(0x61);
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent >= totalBytes) {
          controller.enqueue(tail);
          controller.close();
          return;
        }
        controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
  };
const FUZZ_BOUNDARY = 'fuzzb0undary';
/** Bytes that are not UTF-8: a lone continuation byte, an overlong form, a truncated sequence, 0xFF. */
const INVALID_UTF8 = [[0x80], [0xc0, 0xaf], [0xe2, 0x82], [0xff], [0xed, 0xa0, 0x80]];

/** Hostile bodies the service must refuse quickly: oversized streams, bytes that are not UTF-8, 50,000 levels of nesting. */
const hostileBody: fc.Arbitrary<Body> = fc.oneof(
  fc
    .tuple(fc.constantFrom('json', 'form', 'multipart'), fc.integer({ min: MAX_BODY + 1, max: 60 * MAX_BODY }))
    .map(([kind, size]): Body => {
      if (kind === 'json')
        return { body: streamed(utf8('{"first_name":"'), size, utf8('"}')), contentType: 'application/json' };
      if (kind === 'form')
        return { body: streamed(utf8('first_name='), size), contentType: 'application/x-www-form-urlencoded' };
      return {
        body: streamed(
          utf8(`--${FUZZ_BOUNDARY}\r\nContent-Disposition: form-data; name="first_name"\r\n\r\n`),
          size,
          utf8(`\r\n--${FUZZ_BOUNDARY}--\r\n`),
        ),
        contentType: `multipart/form-data; boundary=${FUZZ_BOUNDARY}`,
      };
    }),
  fc.tuple(fc.constantFrom('json', 'form', 'multipart'), fc.constantFrom(...INVALID_UTF8)).map(([kind, bad]): Body => {
    const bytes = new Uint8Array(bad);
    if (kind === 'json')
      return {
        body: concat(utf8('{"first_name":"A'), bytes, utf8('","last_name":"B","phone_number":"+256772100099"}')),
        contentType: 'application/json',
      };
    if (kind === 'form')
      return {
        body: `first_name=A${Array.from(bytes, (byte) => `%${byte.toString(16)}`).join('')}&last_name=B`,
        contentType: 'application/x-www-form-urlencoded',
      };
    return {
      body: concat(
        utf8(`--${FUZZ_BOUNDARY}\r\nContent-Disposition: form-data; name="first_name"\r\n\r\nA`),
        bytes,
        utf8(`\r\n--${FUZZ_BOUNDARY}--\r\n`),
      ),
      contentType: `multipart/form-data; boundary=${FUZZ_BOUNDARY}`,
    };
  }),
  fc.tuple(fc.integer({ min: 30_000, max: 50_000 }), fc.constantFrom('[', '{"a":')).map(
    ([depth, open]): Body => ({
      body: `{"metadata":${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)},"first_name":"A","last_name":"B","phone_number":"+256772100098"}`,
      contentType: 'application/json',
    }),
  ),
);

const requestBody = (path: string): fc.Arbitrary<Body> =>
  fc
    .oneof(
      { arbitrary: fc.constant({}), weight: 20 },
      {
        arbitrary: bodyFields(path).map(
          (body): Body => ({ body: JSON.stringify(body), contentType: 'application/json' }),
        ),
        weight: 80,
      },
      {
        arbitrary: formPairs(path).map(
          (pairs): Body => ({
            body: new URLSearchParams(pairs).toString(),
            contentType: 'application/x-www-form-urlencoded',
          }),
        ),
        weight: 60,
      },
      {
        arbitrary: fc.tuple(formPairs(path), fc.boolean()).map(([pairs, withFile]): Body => {
          const form = new FormData();
          for (const [key, value] of pairs) form.append(key, value);
          if (withFile) form.append('metadata', new Blob(['{"a":1}'], { type: 'application/json' }), 'metadata.json');
          return { body: form };
        }),
        weight: 40,
      },
      {
        arbitrary: fc
          .oneof(
            fc.constantFrom(
              '{',
              '{"a":',
              '[1,2]',
              'null',
              '"text"',
              '1e999',
              '{"a":1}{"b":2}',
              '\ufeff{}',
              '{"__proto__":{"x":1}}',
              '[]'.repeat(10),
            ),
            fc.integer({ min: 1, max: 20_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
            evilString,
          )
          .map((text): Body => ({ body: text, contentType: 'application/json' })),
        weight: 40,
      },
      {
        arbitrary: fc
          .uint8Array({ maxLength: 200 })
          .map((bytes): Body => ({ body: bytes, contentType: 'application/octet-stream' })),
        weight: 20,
      },
      { arbitrary: hostileBody, weight: 25 },
      {
        arbitrary: fc
          .constantFrom('json', 'form')
          .map(
            (kind): Body =>
              kind === 'json'
                ? { body: JSON.stringify({ first_name: 'x'.repeat(MAX_BODY) }), contentType: 'application/json' }
                : { body: `first_name=${'x'.repeat(MAX_BODY)}`, contentType: 'application/x-www-form-urlencoded' },
          ),
        weight: 1,
      },
    )
    .chain((body) =>
      // Now and then the declared media type says something else.
      fc
        .option(fc.oneof(fc.constantFrom(...CONTENT_TYPES), headerText(40)), { freq: 4 })
        .map((contentType) => (contentType === null ? body : { ...body, contentType })),
    );

/** Every byte of the text's UTF-8 percent-encoded (a lone surrogate becomes U+FFFD, as on the wire). */
const percentEncoded = (text: string): string =>
  Array.from(new TextEncoder().encode(text), (byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

type PathId = { text: string; foreign: boolean };
const junkId = fc
  .oneof(
    fc.constantFrom(
      '0',
      '-1',
      '1.5',
      '1e3',
      '0x10',
      '99999999999999999999',
      '9007199254740993',
      '000000000000001',
      '..',
      '.',
      '../..',
      '..%2f..%2fetc',
      '%2e%2e',
      '%00',
      '%',
      'null',
      ' 1',
      '1 ',
      '+1',
    ),
    fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
    evilString.map(percentEncoded),
  )
  .map((text): PathId => ({ text, foreign: false }));

/** A path parameter: an id of ours or of the other organization from the table it names, or junk. */
function pathId(table: string | undefined): fc.Arbitrary<PathId> {
  const ids = table === undefined ? undefined : idsByTable.get(table);
  const choices: fc.WeightedArbitrary<PathId>[] = [{ arbitrary: junkId, weight: 4 }];
  if (ids?.own.length)
    choices.push({ arbitrary: fc.constantFrom(...ids.own).map((text) => ({ text, foreign: false })), weight: 3 });
  if (ids?.foreign.length)
    choices.push({ arbitrary: fc.constantFrom(...ids.foreign).map((text) => ({ text, foreign: true })), weight: 3 });
  return fc.oneof(...choices);
}

const QUERY_KEYS = [
  'limit',
  'offset',
  'first_name',
  'last_name',
  'email',
  'phone_number',
  'phonenumber',
  'created_after',
  'created_before',
  'modified_after',
  'modified_before',
  'status',
  'amount',
  'currency',
  'collection',
  'remote_transaction_id',
  'reason',
  'contact_first_name',
  'contact_last_name',
  'type',
  'user',
  'event',
  'groupby',
  'network',
  'collection_request',
];
const query = () =>
  fc.oneof(
    { arbitrary: fc.constant(''), weight: 2 },
    {
      arbitrary: fc
        .array(
          fc.tuple(
            fc.oneof({ arbitrary: fc.constantFrom(...QUERY_KEYS), weight: 5 }, { arbitrary: evilString, weight: 1 }),
            fc.oneof(evilString, fc.integer().map(String), fc.constantFrom(...foreignIds)),
          ),
          { maxLength: 5 },
        )
        .map((pairs) => `?${new URLSearchParams(pairs).toString()}`),
      weight: 6,
    },
    {
      arbitrary: fc.constantFrom(
        '?',
        '?&&',
        '?=',
        '?limit',
        '?limit=&offset=',
        '?%zz=%zz',
        '?a[b]=1&a[]=2',
        '?limit=1&limit=2',
      ),
      weight: 1,
    },
  );

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const ACCEPTS = [
  undefined,
  undefined,
  undefined,
  undefined,
  undefined,
  undefined,
  undefined,
  'application/json',
  '*/*',
  'application/*',
  'application/json;q=0',
  'text/html',
  'text/*;q=0.5, */*;q=0.1',
  '',
];
const API_VERSIONS = [
  undefined,
  undefined,
  undefined,
  'v1',
  'v2',
  'v3',
  'v4',
  'v0',
  'v5',
  'V2',
  '2',
  ' v3 ',
  'v1.0',
  'latest',
  '',
];
const VERSION_PREFIXES = ['', '', '', '/v1', '/v2', '/v3', '/v4', '/v0', '/v99', '/V2', '/vx'];

type FuzzRequest = {
  method: string;
  path: string;
  foreignPath: boolean;
  query: string;
  headers: Record<string, string>;
  body: Body;
  route: string;
};

const fuzzRequest = (routes: { method: string; path: string }[]): fc.Arbitrary<FuzzRequest> =>
  fc.constantFrom(...routes).chain((route) =>
    fc
      .record({
        method: fc.oneof(
          { arbitrary: fc.constant(route.method), weight: 9 },
          { arbitrary: fc.constantFrom(...METHODS), weight: 1 },
        ),
        ids: fc.tuple(
          ...(route.path.match(/:[^/]+/g) ?? []).map((_, index) => pathId(tableOfParameter(route.path, index))),
        ),
        version: route.path.startsWith('/api/') ? fc.constantFrom(...VERSION_PREFIXES) : fc.constant(''),
        slash: fc.boolean(),
        query: query(),
        body: requestBody(route.path),
        authorization: fc.oneof(
          { arbitrary: fc.constant('own'), weight: 12 },
          {
            arbitrary: fc.constantFrom(
              '',
              'Token',
              'Token ',
              'Basic dXNlcjpwYXNz',
              'Token 0000000000000000000000000000000000000000',
            ),
            weight: 1,
          },
          { arbitrary: headerText(60).map((text) => `Token ${text}`), weight: 1 },
        ),
        accept: fc.oneof(
          { arbitrary: fc.constantFrom(...ACCEPTS), weight: 30 },
          { arbitrary: headerText(30), weight: 1 },
        ),
        apiVersion: fc.oneof(
          { arbitrary: fc.constantFrom(...API_VERSIONS), weight: 8 },
          { arbitrary: headerText(20), weight: 1 },
        ),
        duplicateCheckKey: fc.option(fc.oneof(fc.constantFrom('fuzz-key-1', 'fuzz-key-2'), headerText(300)), {
          freq: 3,
        }),
        billsDate: fc.option(fc.oneof(fc.constant(new Date().toUTCString()), headerText(40)), { freq: 2 }),
      })
      .map((drawn): FuzzRequest => {
        const foreignIds: string[] = [];
        let index = 0;
        const concrete = route.path.replace(/:[^/]+/g, () => {
          const id = drawn.ids[index++]!;
          if (id.foreign) foreignIds.push(id.text);
          return id.text;
        });
        const path = `${concrete.replace(/^\/api(?=\/)/, `/api${drawn.version}`)}${drawn.slash ? '/' : ''}`;
        // Foreign while another organization's id is still in the path once `..` segments after it are resolved.
        const segments = new URL(`${BASE_URL}${path}`).pathname.split('/');
        const foreignPath = foreignIds.some((id) => segments.includes(id));
        const headers: Record<string, string> = {};
        if (drawn.authorization === 'own') headers.Authorization = `Token ${own.apiKey}`;
        else if (drawn.authorization !== '') headers.Authorization = drawn.authorization;
        if (drawn.accept !== undefined) headers.Accept = drawn.accept;
        if (drawn.apiVersion !== undefined) headers['Api-Version'] = drawn.apiVersion;
        if (drawn.duplicateCheckKey !== null) headers['Duplicate-Check-Key'] = drawn.duplicateCheckKey;
        if (drawn.billsDate !== null) headers['Bills-date'] = drawn.billsDate;
        return {
          method: drawn.method,
          path,
          foreignPath,
          query: drawn.query,
          headers,
          body: drawn.body,
          route: `${route.method} ${route.path}`,
        };
      }),
  );

// ---------------------------------------------------------------------------------------------

function toRequest(fuzz: FuzzRequest): Request {
  const headers = new Headers(fuzz.headers);
  const hasBody = !['GET', 'HEAD'].includes(fuzz.method) && fuzz.body.body !== undefined;
  if (hasBody && fuzz.body.contentType !== undefined) headers.set('Content-Type', fuzz.body.contentType);
  const body = typeof fuzz.body.body === 'function' ? fuzz.body.body() : fuzz.body.body;
  return new Request(`${BASE_URL}${fuzz.path}${fuzz.query}`, {
    method: fuzz.method,
    headers,
    body: hasBody ? body : undefined,
    ...(hasBody && body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
}

/** A refusal must come fast: under this, timed around the app (a second try absorbs a pause of the test process itself). */
const REFUSAL_MS = 100;

const LEAKS = /node_modules|PostgresError|syntax error at|\n\s+at |\bsrc\/\w+\.ts\b/;

test(`${RUNS} malformed requests to every route: no 5xx, no write on a refusal, nothing of another organization`, async () => {
  // The API's routes: the web console's HTML pages need a console session, not a key (test/api/console.test.ts).
  const routes = ctx.app.routes
    .filter((route) => !isConsolePath(route.path))
    .map((route) => ({
      method: METHODS.includes(route.method.toUpperCase()) ? route.method.toUpperCase() : 'GET',
      path: route.path,
    }));
  expect(routes.length).toBeGreaterThanOrEqual(15);
  const foreignBefore = await fingerprint([foreign.organization.id]);
  let before = await fingerprint();

  await fc.assert(
    fc.asyncProperty(fuzzRequest(routes), async (fuzz) => {
      const start = before;
      const sentAt = performance.now();
      let response = await ctx.app.handle(toRequest(fuzz));
      let tookMs = performance.now() - sentAt;
      if (response.status >= 400 && response.status < 500 && tookMs >= REFUSAL_MS) {
        // A refusal wrote nothing, so it can be sent again: a GC pause is not the service being slow.
        const again = performance.now();
        response = await ctx.app.handle(toRequest(fuzz));
        tookMs = performance.now() - again;
      }
      const text = await response.text();
      const after = await fingerprint();
      before = after;
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const seen = {
        request: `${fuzz.method} ${fuzz.path}${fuzz.query.slice(0, 200)}`,
        route: fuzz.route,
        status: response.status,
        body: text.slice(0, 300),
      };

      expect({ ...seen, serverError: response.status >= 500 }).toEqual({ ...seen, serverError: false });
      if (response.status >= 400)
        expect({ ...seen, slowRefusal: tookMs >= REFUSAL_MS }).toEqual({ ...seen, slowRefusal: false });
      // The docs page's script is a package's bundle, served as it is: its text is not an answer of the API.
      const asset = fuzz.path.startsWith(DOCS_SCRIPT_PATH);
      expect({ ...seen, leaks: !asset && LEAKS.test(text) }).toEqual({ ...seen, leaks: false });
      // The docs page (HTML), /metrics (Prometheus text) and the `.csv` downloads are the answers that are not JSON.
      const csvDownload =
        fuzz.route.endsWith('.csv') &&
        response.status === 200 &&
        (response.headers.get('content-type') ?? '').startsWith('text/csv');
      if (
        text !== '' &&
        !fuzz.path.startsWith(DOCS_PATH) &&
        !(fuzz.route === `GET ${METRICS_PATH}` && response.status === 200) &&
        !csvDownload
      ) {
        expect({
          ...seen,
          json: (() => {
            try {
              JSON.parse(text);
              return true;
            } catch {
              return false;
            }
          })(),
        }).toEqual({ ...seen, json: true });
      }
      if (fuzz.foreignPath) expect({ ...seen, answered: response.status < 400 }).toEqual({ ...seen, answered: false });
      expect({ ...seen, foreignData: text.includes(MARKER) }).toEqual({ ...seen, foreignData: false });
      if (response.status >= 400) expect({ ...seen, rows: after }).toEqual({ ...seen, rows: start });
    }),
    { numRuns: RUNS, seed: SEED },
  );

  expect(await fingerprint([foreign.organization.id])).toEqual(foreignBefore);
}, 600_000);
