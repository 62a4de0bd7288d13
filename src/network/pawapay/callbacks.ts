/**
 * The paths pawaPay calls back (registered in pawaPay's dashboard under PUBLIC_BASE_URL), mounted
 * by the API (src/api/operator-callbacks.ts): the final state of a deposit, a payout or a refund.
 * A callback is a hint, never believed: it wakes the workflow of the operation its id names, which
 * then asks pawaPay's status query (./client.ts), the only thing that moves money. Where pawaPay
 * signs its callbacks (RFC 9421: Content-Digest, Signature-Input, Signature, Signature-Date), a
 * signature that does not verify against pawaPay's published keys is refused (403) and wakes
 * nothing; with PAWAPAY_SIGNED_CALLBACKS=true an unsigned callback is refused too.
 */
import type { KeyObject } from 'node:crypto';
import * as v from 'valibot';
import { logger } from '../../log';
import { CallbackRefusal, type CallbackContext, type CallbackRoute } from '../callback-routes';
import { CALLBACK_TAGS, optionalText, received } from '../callback-schemas';
import { callOperator } from '../operator-http';
import { MOVEMENTS, type Movement } from './client';
import { parsePublicKeys, verifySignedCallback } from './signatures';
import type { PawapaySettings } from './settings';

export const PAWAPAY_CALLBACK_PATHS = {
  deposit: '/network/pawapay/deposits',
  payout: '/network/pawapay/payouts',
  refund: '/network/pawapay/refunds',
} as const;

/**
 * How long pawaPay's public keys are kept before they are fetched again (sooner when a callback names a key not among
 * them).
 */
const KEYS_LIFETIME_MS = 3_600_000;

type Keys = { keys: Map<string, KeyObject>; fetchedAt: number };
const keysBySettings = new WeakMap<PawapaySettings, Keys>();

/**
 * pawaPay's keys for signed callbacks (`GET /v2/public-key/http`), fetched again when old or when `keyId` is not among
 * them.
 */
async function publicKeys(settings: PawapaySettings, keyId: string | null): Promise<Map<string, KeyObject>> {
  const held = keysBySettings.get(settings);
  const fresh = held && Date.now() - held.fetchedAt < KEYS_LIFETIME_MS && (keyId === null || held.keys.has(keyId));
  if (fresh) return held.keys;
  const answer = await callOperator({
    method: 'GET',
    url: `${settings.baseUrl}/v2/public-key/http`,
    headers: { Authorization: `Bearer ${settings.apiToken}` },
    timeoutMs: 10_000,
  });
  if (answer.status !== 200) throw new Error(`pawaPay public keys: HTTP ${answer.status}`);
  const keys = parsePublicKeys(answer.body);
  keysBySettings.set(settings, { keys, fetchedAt: Date.now() });
  return keys;
}

/** The key id a callback's Signature-Input names (`keyid="..."`), or null. */
const keyIdOf = (request: Request): string | null =>
  /keyid="([^"]+)"/.exec(request.headers.get('signature-input') ?? '')?.[1] ?? null;

/**
 * The URL pawaPay called, as it signed it: the callback URL registered under PUBLIC_BASE_URL (a
 * proxy in front of the API may have changed the host, the scheme or a path prefix on the way).
 */
function calledUrl(request: Request, path: string, publicBaseUrl: string | undefined): string {
  if (publicBaseUrl === undefined) return request.url;
  return `${publicBaseUrl.replace(/\/+$/, '')}${path}${new URL(request.url).search}`;
}

/** Refuses a callback whose signature does not verify (or, when signatures are required, one that has none). */
async function checkSignature(
  settings: PawapaySettings,
  request: Request,
  url: string,
  rawBody: Uint8Array,
): Promise<void> {
  const signed = request.headers.has('signature') || request.headers.has('signature-input');
  if (!signed) {
    if (!settings.signedCallbacks) return;
    throw new CallbackRefusal(403, 'The callback is not signed.');
  }
  let keys: Map<string, KeyObject>;
  try {
    keys = await publicKeys(settings, keyIdOf(request));
  } catch (error) {
    // Nothing to check it against: refused, and pawaPay sends it again (the status query is asked at the next poll
    // anyway).
    logger.warn('pawaPay callback refused: its public keys could not be fetched', { error });
    throw new CallbackRefusal(503, "The callback's signature cannot be checked now. Try again shortly.", 30);
  }
  const verdict = verifySignedCallback({ method: request.method, url, headers: request.headers, rawBody }, keys);
  if (!verdict.valid) {
    logger.warn('pawaPay callback refused: its signature does not verify', { reason: verdict.reason });
    throw new CallbackRefusal(403, "The callback's signature does not verify.");
  }
}

async function pawapayCallback(
  movement: Movement,
  body: Record<string, unknown>,
  request: Request,
  rawBody: Uint8Array,
  { records, settings, wake, publicBaseUrl }: CallbackContext<PawapaySettings>,
) {
  const id = String(body[MOVEMENTS[movement].idField]);
  if (!settings) {
    logger.info('pawaPay callback ignored: the pawaPay connector is off', { movement, id });
    return { status: 'received' as const };
  }
  await checkSignature(settings, request, calledUrl(request, PAWAPAY_CALLBACK_PATHS[movement], publicBaseUrl), rawBody);
  const operation = await records.findOperationByOperatorReference(
    settings.providers.map((provider) => provider.network),
    id,
  );
  if (operation) await wake(operation, body);
  else logger.info('pawaPay callback for no operation of ours ignored', { movement, id });
  return { status: 'received' as const };
}

const idSchema = v.pipe(v.string(), v.regex(/^[0-9a-fA-F-]{36}$/, "Enter pawaPay's id (a UUID)."));
const callbackBody = (movement: Movement) =>
  v.looseObject({ [MOVEMENTS[movement].idField]: idSchema, status: optionalText });

const EXAMPLES: Record<Movement, Record<string, unknown>> = {
  deposit: {
    depositId: 'f4401bd2-1568-4140-bf2d-eb77d2b2b639',
    status: 'COMPLETED',
    amount: '1500',
    currency: 'TZS',
    country: 'TZA',
    payer: { type: 'MMO', accountDetails: { phoneNumber: '255651234567', provider: 'TIGO_TZA' } },
    customerMessage: 'Invoice 901',
    created: '2026-11-27T09:00:00Z',
    providerTransactionId: 'ABC123',
  },
  payout: {
    payoutId: '8917c345-4791-4285-a416-62f24b6982db',
    status: 'COMPLETED',
    amount: '1500',
    currency: 'TZS',
    country: 'TZA',
    recipient: { type: 'MMO', accountDetails: { phoneNumber: '255651234567', provider: 'TIGO_TZA' } },
    created: '2026-11-27T09:00:00Z',
  },
  refund: {
    refundId: 'ee8e1b2c-41a5-4a9b-9a1c-4f0a6d0d33a1',
    depositId: 'f4401bd2-1568-4140-bf2d-eb77d2b2b639',
    status: 'COMPLETED',
    amount: '1500',
    currency: 'TZS',
  },
};

const route = (movement: Movement, operationId: string): CallbackRoute<PawapaySettings> => ({
  method: 'POST',
  path: PAWAPAY_CALLBACK_PATHS[movement],
  body: callbackBody(movement),
  keepsRawBody: true,
  docs: {
    operationId,
    summary: `pawaPay ${movement} callback (the ${movement}s callback URL in pawaPay's dashboard)`,
    description: [
      `pawaPay posts a ${movement} in its final state here.`,
      `It is a hint: the workflow of the ${movement} its \`${MOVEMENTS[movement].idField}\` names wakes`,
      "and asks pawaPay's status query, which alone decides.",
      "A signed callback (RFC 9421) whose signature does not verify against pawaPay's published keys",
      'is refused (403) and wakes nothing; with PAWAPAY_SIGNED_CALLBACKS=true an unsigned one is refused too.',
    ].join(' '),
    tags: CALLBACK_TAGS,
    caller: 'anyone',
    errors: [403, 429],
    responses: { 200: { description: 'Taken.', schema: received('pawaPay') } },
    requestExample: EXAMPLES[movement],
  },
  handle: async ({ body, request, rawBody }, context) =>
    await pawapayCallback(movement, body, request, rawBody, context),
});

export const PAWAPAY_CALLBACK_ROUTES: readonly CallbackRoute<PawapaySettings>[] = [
  route('deposit', 'pawapayDepositCallback'),
  route('payout', 'pawapayPayoutCallback'),
  route('refund', 'pawapayRefundCallback'),
];
