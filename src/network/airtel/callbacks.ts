/**
 * The path Airtel Money calls back (the one callback URL registered in Airtel's portal), mounted by
 * the API (src/api/operator-callbacks.ts): a hint, never believed; the workflow it wakes asks Airtel's
 * transaction enquiry, which alone decides. With AIRTEL_CALLBACK_KEY set, a callback must carry its hash.
 */
import * as v from 'valibot';
import { logger } from '../../log';
import { CallbackRefusal, type CallbackContext, type CallbackRoute } from '../callback-routes';
import { nested } from '../operator-http';
import { CALLBACK_TAGS, optionalReference, optionalText, received, reference } from '../callback-schemas';
import { AIRTEL_CALLBACK_PATH, airtelNetworks, callbackHashMatches } from './protocol';
import type { AirtelSettings } from './settings';

const AirtelCallback = v.looseObject({
  transaction: v.looseObject({
    id: reference,
    message: optionalText,
    status_code: optionalText,
    airtel_money_id: optionalReference,
  }),
  hash: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(200)))),
});

/** The `transaction` object of each Airtel callback as it arrived (compact JSON), by request. */
const receivedTransactions = new WeakMap<Request, string>();

/**
 * Airtel's callback, checked against AIRTEL_CALLBACK_KEY when one is set: the hash is computed over
 * the `transaction` object as it arrived (its keys in their order), not over the schema's output.
 */
async function airtelCallback(
  body: v.InferOutput<typeof AirtelCallback>,
  request: Request,
  { records, settings, wake }: CallbackContext<AirtelSettings>,
) {
  if (
    settings?.callbackKey &&
    !callbackHashMatches(settings.callbackKey, receivedTransactions.get(request) ?? '', body.hash)
  ) {
    logger.warn('Airtel callback refused: its hash does not match', { transactionId: String(body.transaction.id) });
    throw new CallbackRefusal(403, "The callback's hash does not match.");
  }
  const transactionId = String(body.transaction.id);
  const operation = settings
    ? await records.findOperationByOperatorReference(airtelNetworks(settings.countries), transactionId)
    : undefined;
  if (operation) await wake(operation, body);
  else logger.info('Airtel callback for no operation of ours ignored', { transactionId });
  return { status: 'received' as const };
}

export const AIRTEL_CALLBACK_ROUTES: readonly CallbackRoute<AirtelSettings>[] = [
  {
    method: 'POST',
    path: AIRTEL_CALLBACK_PATH,
    body: AirtelCallback,
    // Before validation rebuilds the body: the transaction object as it arrived, for its hash.
    received: (body, request) => {
      receivedTransactions.set(request, JSON.stringify(nested(body, 'transaction')) ?? '');
    },
    docs: {
      operationId: 'airtelCallback',
      summary: "Airtel Money callback (the callback URL registered in Airtel's portal)",
      description: [
        "Airtel Money reports a USSD push's outcome here.",
        "It is a hint: the request's workflow wakes and asks Airtel's transaction enquiry, which alone decides.",
        'With AIRTEL_CALLBACK_KEY set,',
        'a callback whose `hash` is not Base64(HMAC-SHA256(key, its `transaction` object as compact JSON))',
        'is refused (403) and wakes nothing.',
      ].join(' '),
      tags: CALLBACK_TAGS,
      caller: 'anyone',
      errors: [403, 429],
      responses: { 200: { description: 'Taken.', schema: received('Airtel') } },
      requestExample: {
        transaction: {
          id: 'C0d1e2f3a4b5c6d7e8f9a0b1',
          message: 'Paid UGX 1,500 to Merchant',
          status_code: 'TS',
          airtel_money_id: 'MP210603.1234.L06941',
        },
        hash: 'zITVAAGYSlzl1WkUQJn81kbpT5drH3koffT8jCkcJJA=',
      },
    },
    handle: async ({ body, request }, context) => await airtelCallback(body, request, context),
  },
];
