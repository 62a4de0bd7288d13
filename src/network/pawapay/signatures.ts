/**
 * pawaPay's signed callbacks (Merchant API v2, https://docs.pawapay.io/v2/docs/signatures): RFC 9421
 * HTTP Message Signatures over an RFC 9530 `Content-Digest`. A signed callback carries
 *
 *   Content-Digest:  sha-512=:<base64>:          (sha-256 is allowed too)
 *   Signature-Date:  2026-09-23T13:55:10.673817314Z   (pawaPay's own header, covered by the signature)
 *   Signature-Input: sig-pp=("@method" "@authority" "@path" "signature-date" "content-digest" "content-type");
 *                    alg="ecdsa-p256-sha256";keyid="HTTP_EC_P256_KEY:1";created=1790171710;expires=1790171770
 *   Signature:       sig-pp=:<base64>:
 *
 * and the key is one of `GET /v2/public-key/http` (`[{ id, key }]`, `key` a PEM public key), found
 * by `keyid`. The signature base is RFC 9421 §2.5's: one `"<component>": <value>` line per covered
 * component, then the `"@signature-params"` line. pawaPay's ECDSA signatures arrive DER-encoded (its
 * published signing examples use the platform's default encoding) where RFC 9421 §3.3.4 says raw
 * r||s: both are taken, since they encode the same pair. A valid signature proves the callback came
 * from pawaPay unchanged; it proves nothing about money, which the status query alone decides.
 */
import { constants, createHash, createPublicKey, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';

// ---------------------------------------------------------------------------------------------
// RFC 8941 structured fields: the part RFC 9421 and RFC 9530 use (dictionaries, inner lists,
// parameters, strings, tokens, integers, decimals, byte sequences, booleans).
// ---------------------------------------------------------------------------------------------

type BareItem =
  | { type: 'string' | 'token'; value: string }
  | { type: 'integer' | 'decimal'; value: number }
  | { type: 'bytes'; value: Uint8Array }
  | { type: 'boolean'; value: boolean };
type Parameters = [string, BareItem][];
type Item = { kind: 'item'; item: BareItem; params: Parameters };
type InnerList = { kind: 'list'; items: Item[]; params: Parameters };

class FieldError extends Error {}

type Cursor = { text: string; at: number };
const peek = (cursor: Cursor): string => cursor.text[cursor.at] ?? '';
const skip = (cursor: Cursor, characters: string): void => {
  while (cursor.at < cursor.text.length && characters.includes(peek(cursor))) cursor.at += 1;
};
const consume = (cursor: Cursor, character: string): void => {
  if (peek(cursor) !== character) throw new FieldError(`expected "${character}" at ${cursor.at}`);
  cursor.at += 1;
};

function parseKey(cursor: Cursor): string {
  const match = /^[a-z*][a-z0-9_.*-]*/.exec(cursor.text.slice(cursor.at));
  if (match === null) throw new FieldError(`expected a key at ${cursor.at}`);
  cursor.at += match[0].length;
  return match[0];
}

function parseNumber(cursor: Cursor): BareItem {
  const match = /^-?\d+(\.\d+)?/.exec(cursor.text.slice(cursor.at));
  if (match === null) throw new FieldError(`expected a number at ${cursor.at}`);
  const [text, fraction] = [match[0], match[1]];
  const whole = text.replace(/^-/, '').split('.')[0]!;
  // Integers have at most 15 digits; decimals at most 12, then a point and 1 to 3 digits.
  if (fraction === undefined ? whole.length > 15 : whole.length > 12 || fraction.length > 4)
    throw new FieldError(`number too long at ${cursor.at}`);
  cursor.at += text.length;
  return { type: fraction === undefined ? 'integer' : 'decimal', value: Number(text) };
}

function parseString(cursor: Cursor): BareItem {
  consume(cursor, '"');
  let value = '';
  for (;;) {
    const character = peek(cursor);
    cursor.at += 1;
    if (character === '') throw new FieldError('unterminated string');
    if (character === '"') return { type: 'string', value };
    if (character === '\\') {
      const escaped = peek(cursor);
      if (escaped !== '"' && escaped !== '\\') throw new FieldError(`bad escape at ${cursor.at}`);
      value += escaped;
      cursor.at += 1;
    } else if (character < ' ' || character > '~') {
      throw new FieldError(`bad character in string at ${cursor.at - 1}`);
    } else {
      value += character;
    }
  }
}

function parseBareItem(cursor: Cursor): BareItem {
  const first = peek(cursor);
  if (first === '-' || (first >= '0' && first <= '9')) return parseNumber(cursor);
  if (first === '"') return parseString(cursor);
  if (first === ':') {
    const match = /^:([A-Za-z0-9+/=]*):/.exec(cursor.text.slice(cursor.at));
    if (match === null) throw new FieldError(`bad byte sequence at ${cursor.at}`);
    cursor.at += match[0].length;
    return { type: 'bytes', value: new Uint8Array(Buffer.from(match[1]!, 'base64')) };
  }
  if (first === '?') {
    const match = /^\?[01]/.exec(cursor.text.slice(cursor.at));
    if (match === null) throw new FieldError(`bad boolean at ${cursor.at}`);
    cursor.at += 2;
    return { type: 'boolean', value: match[0] === '?1' };
  }
  const token = /^[A-Za-z*][!#$%&'*+.^_`|~0-9A-Za-z:/-]*/.exec(cursor.text.slice(cursor.at));
  if (token === null) throw new FieldError(`unexpected "${first}" at ${cursor.at}`);
  cursor.at += token[0].length;
  return { type: 'token', value: token[0] };
}

function parseParameters(cursor: Cursor): Parameters {
  const params: Parameters = [];
  while (peek(cursor) === ';') {
    cursor.at += 1;
    skip(cursor, ' ');
    const key = parseKey(cursor);
    let value: BareItem = { type: 'boolean', value: true };
    if (peek(cursor) === '=') {
      cursor.at += 1;
      value = parseBareItem(cursor);
    }
    const existing = params.findIndex(([name]) => name === key);
    if (existing >= 0) params[existing] = [key, value];
    else params.push([key, value]);
  }
  return params;
}

function parseItem(cursor: Cursor): Item {
  const item = parseBareItem(cursor);
  return { kind: 'item', item, params: parseParameters(cursor) };
}

function parseInnerList(cursor: Cursor): InnerList {
  consume(cursor, '(');
  const items: Item[] = [];
  for (;;) {
    skip(cursor, ' ');
    if (peek(cursor) === ')') {
      cursor.at += 1;
      return { kind: 'list', items, params: parseParameters(cursor) };
    }
    items.push(parseItem(cursor));
    if (peek(cursor) !== ' ' && peek(cursor) !== ')') throw new FieldError(`expected " " or ")" at ${cursor.at}`);
  }
}

/** An RFC 8941 dictionary, members in their order; a malformed field throws a FieldError. */
function parseDictionary(text: string): Map<string, Item | InnerList> {
  const cursor: Cursor = { text, at: 0 };
  const members = new Map<string, Item | InnerList>();
  skip(cursor, ' ');
  while (cursor.at < text.length) {
    const key = parseKey(cursor);
    let member: Item | InnerList;
    if (peek(cursor) === '=') {
      cursor.at += 1;
      member = peek(cursor) === '(' ? parseInnerList(cursor) : parseItem(cursor);
    } else {
      member = { kind: 'item', item: { type: 'boolean', value: true }, params: parseParameters(cursor) };
    }
    members.set(key, member);
    skip(cursor, ' \t');
    if (cursor.at >= text.length) break;
    consume(cursor, ',');
    skip(cursor, ' \t');
    if (cursor.at >= text.length) throw new FieldError('trailing comma');
  }
  return members;
}

function serializeBareItem(item: BareItem): string {
  switch (item.type) {
    case 'string':
      return `"${item.value.replace(/[\\"]/g, (character) => `\\${character}`)}"`;
    case 'token':
      return item.value;
    case 'integer':
      return String(item.value);
    case 'decimal':
      return Number.isInteger(item.value) ? `${item.value}.0` : String(Math.round(item.value * 1000) / 1000);
    case 'bytes':
      return `:${Buffer.from(item.value).toString('base64')}:`;
    case 'boolean':
      return item.value ? '?1' : '?0';
  }
}

const serializeParameters = (params: Parameters): string =>
  params
    .map(([key, value]) =>
      value.type === 'boolean' && value.value ? `;${key}` : `;${key}=${serializeBareItem(value)}`,
    )
    .join('');
const serializeItem = (item: Item): string => serializeBareItem(item.item) + serializeParameters(item.params);
const serializeInnerList = (list: InnerList): string =>
  `(${list.items.map(serializeItem).join(' ')})${serializeParameters(list.params)}`;

// ---------------------------------------------------------------------------------------------
// Keys, algorithms, digests
// ---------------------------------------------------------------------------------------------

/**
 * The public keys of `GET /v2/public-key/http`: `[{ "id": "HTTP_EC_P256_KEY:1", "key": "-----BEGIN
 * PUBLIC KEY-----\n…" }]` (https://docs.pawapay.io/v2/api-reference/toolkit/public-keys), by id. A
 * key given as bare base64 (SPKI DER) is read too; an entry that is not a key is left out. An answer
 * that is not a list throws: it is not the documented shape.
 */
export function parsePublicKeys(body: unknown): Map<string, KeyObject> {
  if (!Array.isArray(body)) throw new Error('pawaPay public keys: the answer is not a list');
  const keys = new Map<string, KeyObject>();
  for (const entry of body) {
    const id = (entry as { id?: unknown } | null)?.id;
    const key = (entry as { key?: unknown } | null)?.key;
    if (typeof id !== 'string' || typeof key !== 'string' || id === '') continue;
    try {
      keys.set(
        id,
        key.includes('-----BEGIN')
          ? createPublicKey(key)
          : createPublicKey({ key: Buffer.from(key.replace(/\s+/g, ''), 'base64'), format: 'der', type: 'spki' }),
      );
    } catch {
      // Not a public key: that id simply verifies nothing.
    }
  }
  return keys;
}

type SignatureAlgorithm = 'ecdsa-p256-sha256' | 'ecdsa-p384-sha384' | 'rsa-pss-sha512' | 'rsa-v1_5-sha256';

/** The RFC 9421 §3.3 algorithms pawaPay lists (`Accept-Signature`), with the key each needs. */
const ALGORITHMS: Readonly<
  Record<SignatureAlgorithm, { hash: string; keyTypes: readonly string[]; curve?: string; half?: number }>
> = {
  'ecdsa-p256-sha256': { hash: 'sha256', keyTypes: ['ec'], curve: 'prime256v1', half: 32 },
  'ecdsa-p384-sha384': { hash: 'sha384', keyTypes: ['ec'], curve: 'secp384r1', half: 48 },
  'rsa-pss-sha512': { hash: 'sha512', keyTypes: ['rsa', 'rsa-pss'] },
  'rsa-v1_5-sha256': { hash: 'sha256', keyTypes: ['rsa'] },
};
const isAlgorithm = (name: string): name is SignatureAlgorithm => Object.hasOwn(ALGORITHMS, name);

/** The algorithm a key can verify: the one named (when the key fits it), else the one an EC key's curve implies. */
function algorithmFor(named: string | undefined, key: KeyObject): SignatureAlgorithm | { problem: string } {
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (named === undefined) {
    const implied = (Object.keys(ALGORITHMS) as SignatureAlgorithm[]).find(
      (name) => ALGORITHMS[name].curve !== undefined && ALGORITHMS[name].curve === curve,
    );
    return implied ?? { problem: 'the signature names no algorithm and the key does not imply one' };
  }
  if (!isAlgorithm(named)) return { problem: `unsupported signature algorithm ${named}` };
  const wanted = ALGORITHMS[named];
  const fits =
    wanted.keyTypes.includes(key.asymmetricKeyType ?? '') && (wanted.curve === undefined || wanted.curve === curve);
  return fits ? named : { problem: `the key named does not fit the algorithm ${named}` };
}

/** RSA-PSS as RFC 9421 §3.3.1 fixes it: SHA-512, MGF1 with SHA-512, a 64-byte salt. */
const PSS = { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 } as const;

function signatureVerifies(
  algorithm: SignatureAlgorithm,
  key: KeyObject,
  base: Buffer,
  signature: Uint8Array,
): boolean {
  const { hash, half } = ALGORITHMS[algorithm];
  const attempt = (options: {
    key: KeyObject;
    padding?: number;
    saltLength?: number;
    dsaEncoding?: 'der' | 'ieee-p1363';
  }) => {
    try {
      return verify(hash, base, options, signature);
    } catch {
      return false;
    }
  };
  if (algorithm === 'rsa-pss-sha512') return attempt({ key, ...PSS });
  if (algorithm === 'rsa-v1_5-sha256') return attempt({ key, padding: constants.RSA_PKCS1_PADDING });
  // ECDSA: raw r||s (RFC 9421) when it has that length, else DER (what pawaPay sends).
  return (
    (signature.length === 2 * half! && attempt({ key, dsaEncoding: 'ieee-p1363' })) ||
    attempt({ key, dsaEncoding: 'der' })
  );
}

/** RFC 9530 digest algorithms pawaPay uses for `Content-Digest`. */
const DIGESTS: Readonly<Record<string, string>> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

/**
 * Why `Content-Digest` does not vouch for `body`, or null: every sha-256/sha-512 member must match, and one must be
 * there.
 */
function digestProblem(header: string, body: Uint8Array): string | null {
  let checked = 0;
  for (const [name, member] of parseDictionary(header)) {
    const hash = DIGESTS[name];
    if (hash === undefined) continue;
    if (member.kind !== 'item' || member.item.type !== 'bytes')
      return `the Content-Digest ${name} is not a byte sequence`;
    const actual = createHash(hash).update(body).digest();
    const claimed = Buffer.from(member.item.value);
    if (claimed.length !== actual.length || !timingSafeEqual(claimed, actual))
      return 'the Content-Digest does not match the body';
    checked += 1;
  }
  return checked === 0 ? 'the Content-Digest has no sha-256 or sha-512 digest' : null;
}

// ---------------------------------------------------------------------------------------------
// The signature base (RFC 9421 §2.5)
// ---------------------------------------------------------------------------------------------

type Message = { method: string; url: URL; headers: Headers };

/** A derived component's value (RFC 9421 §2.2), as the request was addressed to us. */
function derivedValue(name: string, { method, url }: Message): string | null {
  switch (name) {
    case '@method':
      return method;
    case '@target-uri':
      return url.href;
    case '@authority':
      return url.host;
    case '@scheme':
      return url.protocol.slice(0, -1);
    case '@request-target':
      return `${url.pathname || '/'}${url.search}`;
    case '@path':
      return url.pathname || '/';
    case '@query':
      return url.search === '' ? '?' : url.search;
    default:
      return null;
  }
}

/** `"name": value` lines, then `"@signature-params"`; a reason instead when a covered component has no value here. */
function signatureBase(params: InnerList, message: Message): string | { problem: string } {
  const lines: string[] = [];
  for (const component of params.items) {
    if (component.item.type !== 'string' || component.params.length > 0)
      return { problem: `unsupported covered component ${serializeItem(component)}` };
    const name = component.item.value;
    const value = name.startsWith('@') ? derivedValue(name, message) : (message.headers.get(name)?.trim() ?? null);
    if (value === null)
      return {
        problem: name.startsWith('@')
          ? `unsupported covered component ${name}`
          : `the covered header ${name} is missing`,
      };
    lines.push(`${serializeItem(component)}: ${value}`);
  }
  lines.push(`"@signature-params": ${serializeInnerList(params)}`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Verifying a callback
// ---------------------------------------------------------------------------------------------

/** pawaPay's signature label (`sig-pp`): taken when present, else the only signature there is. */
const LABEL = 'sig-pp';
/** What every pawaPay callback signature covers; one that leaves any out (the body's digest above all) is not taken. */
const REQUIRED_COMPONENTS = ['@method', '@authority', '@path', 'signature-date', 'content-digest'];
const DEFAULT_COMPONENTS = [...REQUIRED_COMPONENTS, 'content-type'];

type VerifyOptions = {
  /** The time to judge by, in ms (tests); now by default. */
  now?: number;
  /**
   * How old a signature (its `created` and `Signature-Date`) may be: 5 minutes by default. This
   * guards replays of a captured callback; it is not what proves a payment, the status query is.
   */
  maxAgeSeconds?: number;
  /** How far our clock may lag pawaPay's: a signature dated further in the future is refused (60 s). */
  clockSkewSeconds?: number;
};
type Verdict = { valid: true; keyId: string } | { valid: false; reason: string };
type CallbackRequest = {
  method: string;
  /** The URL pawaPay called, as pawaPay saw it (the public scheme, host and path, not a proxy's). */
  url: string;
  headers: Headers;
  /** The body exactly as received: the digest is over these bytes, not over re-serialized JSON. */
  rawBody: string | Uint8Array;
};

const REQUIRED_HEADERS = ['Content-Digest', 'Signature-Input', 'Signature', 'Signature-Date'];

/** `2026-09-23T13:55:10.673817314Z` (any number of fraction digits, `Z` or an offset) in ms, or null. */
function instantOf(text: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/i.exec(text.trim());
  if (match === null) return null;
  const [, year, month, day, hour, minute, second, fraction = '', zone = 'Z'] = match;
  const offset =
    zone.toUpperCase() === 'Z'
      ? 0
      : (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  const utc = Date.UTC(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
    Number(fraction.padEnd(3, '0').slice(0, 3)),
  );
  return Number.isNaN(utc) ? null : utc - offset * 60_000;
}

/** Why the signature's times are not acceptable now, or null. */
function timeProblem(
  signed: { date: number; created?: number; expires?: number },
  options: VerifyOptions,
): string | null {
  const now = options.now ?? Date.now();
  const maxAgeMs = (options.maxAgeSeconds ?? 300) * 1000;
  const skewMs = (options.clockSkewSeconds ?? 60) * 1000;
  for (const [what, at] of [
    ['Signature-Date', signed.date],
    ['created', signed.created],
  ] as const) {
    if (at === undefined) continue;
    if (at - now > skewMs) return `the signature's ${what} is ${Math.round((at - now) / 1000)} s in the future`;
    if (now - at > maxAgeMs)
      return (
        `the signature's ${what} is ${Math.round((now - at) / 1000)} s old (at most ${maxAgeMs / 1000} s is ` + `taken)`
      );
  }
  if (signed.expires !== undefined && now - signed.expires > skewMs) return 'the signature has expired';
  return null;
}

type Chosen = { label: string; input: InnerList; signature: Uint8Array };

/** The signature to check: `sig-pp`, or the only one; its covered components must include the required ones. */
function chooseSignature(headers: Headers): Chosen | { problem: string } {
  const inputs = parseDictionary(headers.get('Signature-Input')!);
  const signatures = parseDictionary(headers.get('Signature')!);
  const label = inputs.has(LABEL) ? LABEL : inputs.size === 1 ? [...inputs.keys()][0]! : null;
  if (label === null) return { problem: `no ${LABEL} signature among several` };
  const input = inputs.get(label)!;
  const signature = signatures.get(label);
  if (input.kind !== 'list') return { problem: `Signature-Input ${label} is not a list of components` };
  if (signature?.kind !== 'item' || signature.item.type !== 'bytes')
    return { problem: `no ${label} signature in the Signature header` };
  const names = input.items.map((component) => (component.item.type === 'string' ? component.item.value : ''));
  if (new Set(names).size !== names.length) return { problem: 'a component is covered twice' };
  const missing = REQUIRED_COMPONENTS.filter((name) => !names.includes(name));
  if (missing.length > 0) return { problem: `the signature does not cover ${missing.join(', ')}` };
  return { label, input, signature: signature.item.value };
}

const param = (list: InnerList, name: string): BareItem | undefined => list.params.find(([key]) => key === name)?.[1];
/** An integer parameter in UNIX seconds (`created`, `expires`), in ms. */
const instantParam = (list: InnerList, name: string): number | undefined => {
  const value = param(list, name);
  return value?.type === 'integer' ? value.value * 1000 : undefined;
};
const stringParam = (list: InnerList, name: string): string | undefined => {
  const value = param(list, name);
  return value?.type === 'string' ? value.value : undefined;
};

/** The checks, in order; the first that fails is the reason. Throws a FieldError on a malformed field. */
function check(request: CallbackRequest, keys: ReadonlyMap<string, KeyObject>, options: VerifyOptions): Verdict {
  const { headers } = request;
  const absent = REQUIRED_HEADERS.filter((name) => !headers.get(name));
  if (absent.length > 0)
    return { valid: false, reason: `missing the ${absent.join(', ')} header${absent.length > 1 ? 's' : ''}` };
  const body = typeof request.rawBody === 'string' ? new TextEncoder().encode(request.rawBody) : request.rawBody;
  const digest = digestProblem(headers.get('Content-Digest')!, body);
  if (digest !== null) return { valid: false, reason: digest };
  const chosen = chooseSignature(headers);
  if ('problem' in chosen) return { valid: false, reason: chosen.problem };
  const keyId = stringParam(chosen.input, 'keyid');
  if (keyId === undefined) return { valid: false, reason: 'the signature names no keyid' };
  const key = keys.get(keyId);
  if (key === undefined) return { valid: false, reason: `unknown key id ${keyId}` };
  const algorithm = algorithmFor(stringParam(chosen.input, 'alg'), key);
  if (typeof algorithm !== 'string') return { valid: false, reason: algorithm.problem };
  const date = instantOf(headers.get('Signature-Date')!);
  if (date === null) return { valid: false, reason: 'the Signature-Date is not a date' };
  const late = timeProblem(
    { date, created: instantParam(chosen.input, 'created'), expires: instantParam(chosen.input, 'expires') },
    options,
  );
  if (late !== null) return { valid: false, reason: late };
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return { valid: false, reason: `not a URL: ${request.url}` };
  }
  const base = signatureBase(chosen.input, { method: request.method, url, headers });
  if (typeof base !== 'string') return { valid: false, reason: base.problem };
  if (!signatureVerifies(algorithm, key, Buffer.from(base, 'utf8'), chosen.signature))
    return { valid: false, reason: 'the signature does not verify' };
  return { valid: true, keyId };
}

/**
 * Whether a callback is pawaPay's, unchanged: the digest against the raw body, the signature against
 * the base rebuilt from this request with the key its `keyid` names (`parsePublicKeys`), and its
 * dates within `maxAgeSeconds`. Refused, with a reason: a missing header, a digest mismatch, an
 * unknown key id, an unsupported algorithm, a bad signature, a stale or future date.
 */
export function verifySignedCallback(
  request: CallbackRequest,
  keys: ReadonlyMap<string, KeyObject>,
  options: VerifyOptions = {},
): Verdict {
  try {
    return check(request, keys, options);
  } catch (error) {
    if (error instanceof FieldError)
      return { valid: false, reason: `a signature header is malformed (${error.message})` };
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Signing (for tests: a callback signed the way pawaPay documents it)
// ---------------------------------------------------------------------------------------------

type SignOptions = {
  keyId: string;
  privateKey: KeyObject;
  algorithm?: SignatureAlgorithm;
  /** When it is signed, in ms (now by default): `created` and `Signature-Date`. */
  now?: number;
  /** pawaPay's window: `expires` is `created` plus this (60 s by default). */
  expiresInSeconds?: number;
  digest?: 'sha-256' | 'sha-512';
  components?: readonly string[];
  /** ECDSA signature encoding: DER as pawaPay sends it (default), or RFC 9421's raw r||s. */
  dsaEncoding?: 'der' | 'ieee-p1363';
};

/**
 * The headers pawaPay adds to a callback (`Content-Type`, `Content-Digest`, `Signature-Date`,
 * `Signature-Input`, `Signature`), signed with `privateKey` over `@method`, `@authority`, `@path`,
 * `signature-date`, `content-digest` and `content-type` unless told otherwise.
 */
export function signCallback(
  request: { method: string; url: string; body: string | Uint8Array; contentType?: string },
  options: SignOptions,
): Record<string, string> {
  const now = options.now ?? Date.now();
  const created = Math.floor(now / 1000);
  const digest = options.digest ?? 'sha-512';
  const body = typeof request.body === 'string' ? new TextEncoder().encode(request.body) : request.body;
  const headers: Record<string, string> = {
    'Content-Type': request.contentType ?? 'application/json',
    'Content-Digest': `${digest}=:${createHash(DIGESTS[digest]!).update(body).digest('base64')}:`,
    'Signature-Date': new Date(now).toISOString(),
  };
  const algorithm = options.algorithm ?? 'ecdsa-p256-sha256';
  const params: InnerList = {
    kind: 'list',
    items: (options.components ?? DEFAULT_COMPONENTS).map((name) => ({
      kind: 'item',
      item: { type: 'string', value: name },
      params: [],
    })),
    params: [
      ['alg', { type: 'string', value: algorithm }],
      ['keyid', { type: 'string', value: options.keyId }],
      ['created', { type: 'integer', value: created }],
      ['expires', { type: 'integer', value: created + (options.expiresInSeconds ?? 60) }],
    ],
  };
  const base = signatureBase(params, {
    method: request.method,
    url: new URL(request.url),
    headers: new Headers(headers),
  });
  if (typeof base !== 'string') throw new Error(`cannot sign: ${base.problem}`);
  const { hash } = ALGORITHMS[algorithm];
  const key =
    algorithm === 'rsa-pss-sha512'
      ? { key: options.privateKey, ...PSS }
      : algorithm === 'rsa-v1_5-sha256'
        ? { key: options.privateKey, padding: constants.RSA_PKCS1_PADDING }
        : { key: options.privateKey, dsaEncoding: options.dsaEncoding ?? 'der' };
  const signature = sign(hash, Buffer.from(base, 'utf8'), key).toString('base64');
  return {
    ...headers,
    'Signature-Input': `${LABEL}=${serializeInnerList(params)}`,
    Signature: `${LABEL}=:${signature}:`,
  };
}
