/**
 * The bodies Daraja sends to its callback routes (./callbacks.ts, ./paybill.ts), as their schemas describe them
 * (its documented fields, their types and sizes), and the acknowledgement it expects back.
 */
import * as v from 'valibot';
import { optionalReference, optionalText, text } from '../callback-schemas';

/**
 * A `{Name, Value}` item of an STK callback's metadata, or a `{Key, Value}` result parameter: `Balance` comes without a
 * value.
 */
const namedValue = (name: 'Name' | 'Key') =>
  v.looseObject({ [name]: v.pipe(v.string(), v.maxLength(100)), Value: optionalText });

/** Daraja's acknowledgement of a callback (its documented `{ResultCode, ResultDesc}`). */
export const DarajaAcknowledgement = v.pipe(
  v.object({
    ResultCode: v.union([v.number(), v.string()]),
    ResultDesc: v.string(),
    ThirdPartyTransID: v.optional(v.string()),
  }),
  v.description(
    "Daraja's expected answer: `ResultCode` 0 (a validation also answers `C2B00013` or `C2B00016` to reject).",
  ),
);
export const ACCEPTED = { ResultCode: 0, ResultDesc: 'Accepted' };

export const StkCallback = v.looseObject({
  Body: v.looseObject({
    stkCallback: v.looseObject({
      MerchantRequestID: optionalReference,
      CheckoutRequestID: v.pipe(v.string(), v.maxLength(100)),
      ResultCode: text,
      ResultDesc: optionalText,
      // Only a completed payment carries it: Amount, MpesaReceiptNumber, TransactionDate, PhoneNumber (and Balance,
      // without a value).
      CallbackMetadata: v.optional(
        v.nullable(v.looseObject({ Item: v.optional(v.pipe(v.array(namedValue('Name')), v.maxLength(50))) })),
      ),
    }),
  }),
});
export type StkCallbackBody = v.InferOutput<typeof StkCallback>;

export const PaybillPayment = v.looseObject({
  TransactionType: optionalText,
  TransID: v.pipe(v.string(), v.regex(/^[A-Za-z0-9]{4,30}$/, "Enter M-Pesa's transaction id.")),
  TransTime: optionalText,
  TransAmount: text,
  BusinessShortCode: optionalText,
  BillRefNumber: optionalText,
  InvoiceNumber: optionalText,
  OrgAccountBalance: optionalText,
  ThirdPartyTransID: optionalText,
  MSISDN: text,
  FirstName: optionalText,
  MiddleName: optionalText,
  LastName: optionalText,
});
export type PaybillPaymentBody = v.InferOutput<typeof PaybillPayment>;

export const DarajaResult = v.looseObject({
  Result: v.looseObject({
    ResultType: optionalText,
    ResultCode: text,
    ResultDesc: optionalText,
    OriginatorConversationID: optionalReference,
    ConversationID: optionalReference,
    TransactionID: optionalReference,
    // Several parameters come as a list, a lone one bare.
    ResultParameters: v.optional(
      v.nullable(
        v.looseObject({
          ResultParameter: v.optional(
            v.union([v.pipe(v.array(namedValue('Key')), v.maxLength(100)), namedValue('Key')]),
          ),
        }),
      ),
    ),
    ReferenceData: v.optional(v.unknown()),
  }),
});
