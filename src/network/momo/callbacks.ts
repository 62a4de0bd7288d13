/**
 * The path MTN MoMo calls back (X-Callback-Url), mounted by the API (src/api/operator-callbacks.ts):
 * a hint, never believed; the workflow it wakes asks MoMo's GET of the transaction, which alone decides.
 */
import * as v from 'valibot';
import { logger } from '../../log';
import type { CallbackContext, CallbackRoute } from '../callback-routes';
import { CALLBACK_TAGS, optionalReference, optionalText, received, text } from '../callback-schemas';
import { MOMO_CALLBACK_PATH } from './client';
import type { MomoSettings } from './settings';

const MomoParty = v.looseObject({ partyIdType: optionalText, partyId: optionalText });
const MomoCallback = v.looseObject({
  financialTransactionId: optionalReference,
  externalId: optionalReference,
  amount: optionalText,
  currency: optionalText,
  payer: v.optional(v.nullable(MomoParty)),
  payee: v.optional(v.nullable(MomoParty)),
  payerMessage: optionalText,
  payeeNote: optionalText,
  status: optionalText,
  // A failure's reason: its code, or `{code, message}` as some releases send it.
  reason: v.optional(v.nullable(v.union([text, v.looseObject({ code: optionalText, message: optionalText })]))),
});

const ReferenceParams = v.object({
  referenceId: v.pipe(
    v.string(),
    v.regex(/^[0-9a-f-]{36}$/i, 'Not found.'),
    v.description('The X-Reference-Id of the request to pay or transfer.'),
  ),
});

async function momoCallback(
  referenceId: string,
  body: unknown,
  { records, settings, wake }: CallbackContext<MomoSettings[]>,
) {
  // Every market calls back at the same path: the reference (derived from the market's own API user) names one
  // operation.
  const networks = (settings ?? []).map((market) => market.network);
  const operation = await records.findOperationByOperatorReference(networks, referenceId);
  if (operation) await wake(operation, body);
  else logger.info('MoMo callback for no operation of ours ignored', { referenceId });
  return { status: 'received' as const };
}

const route = (operationId: string, method: 'PUT' | 'POST'): CallbackRoute<MomoSettings[]> => ({
  method,
  path: `${MOMO_CALLBACK_PATH}/:referenceId`,
  params: ReferenceParams,
  body: MomoCallback,
  docs: {
    operationId,
    summary: `MoMo callback (X-Callback-Url, ${method})`,
    description: [
      'MTN MoMo reports a request to pay or a transfer here (once, PUT or POST).',
      "It is a hint: the workflow wakes and asks MoMo's GET of the transaction, which alone decides.",
    ].join(' '),
    tags: CALLBACK_TAGS,
    caller: 'anyone',
    errors: [404, 429],
    responses: { 200: { description: 'Taken.', schema: received('MoMo') } },
    requestExample: {
      financialTransactionId: '23503452',
      externalId: 'req-901-1',
      amount: '1500',
      currency: 'UGX',
      payer: { partyIdType: 'MSISDN', partyId: '256772123456' },
      status: 'SUCCESSFUL',
    },
  },
  handle: async ({ params, body }, context) => await momoCallback(params.referenceId!, body, context),
});

export const MOMO_CALLBACK_ROUTES: readonly CallbackRoute<MomoSettings[]>[] = [
  route('momoCallback', 'PUT'),
  route('momoCallbackPost', 'POST'),
];
