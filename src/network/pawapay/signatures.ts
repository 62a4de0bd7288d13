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
 *
 * The headers' grammar (RFC 8941) is ./structured-fields.ts; the algorithms and digests ./signature-algorithms.ts.
 */
import { constants, createHash, createPublicKey, sign, type KeyObject } from 'node:crypto';
import {
  ALGORITHMS,
  DIGESTS,
  PSS,
  algorithmFor,
  digestProblem,
  signatureVerifies,
  type SignatureAlgorithm,
} from './signature-algorithms';
import {
  FieldError,
  parseDictionary,
  serializeInnerList,
  serializeItem,
  type BareItem,
  type InnerList,
} from './structured-fields';

// ---------------------------------------------------------------------------------------------
// Keys
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
    if (now - at > maxAgeMs) {
      const age = Math.round((now - at) / 1000);
      return `the signature's ${what} is ${age} s old (at most ${maxAgeMs / 1000} s is taken)`;
    }
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
