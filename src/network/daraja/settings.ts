/**
 * The settings of the M-Pesa Daraja connector (Safaricom, KES), declared here and read with the rest of the
 * configuration.
 */
import * as v from 'valibot';
import { booleanString, connectorSwitch, httpUrl, integerString, secret } from '../../config-values';

export const DARAJA_VARIABLES = {
  // M-Pesa Daraja (Safaricom, KES): on when MPESA_CONSUMER_KEY is set; then every MPESA_* value is required.
  MPESA_BASE_URL: v.optional(httpUrl, 'https://api.safaricom.co.ke'),
  MPESA_CONSUMER_KEY: v.optional(secret),
  MPESA_CONSUMER_SECRET: v.optional(secret),
  MPESA_SHORTCODE: v.optional(
    v.pipe(v.string(), v.regex(/^\d{5,9}$/, 'must be the 5 to 9 digits of a paybill or till number')),
  ),
  MPESA_PASSKEY: v.optional(secret),
  MPESA_INITIATOR_NAME: v.optional(secret),
  MPESA_SECURITY_CREDENTIAL: v.optional(secret),
  // How long a merchant's verification URL has to answer a paybill validation: Safaricom waits about 8 s for ours.
  MPESA_VALIDATION_TIMEOUT_MS: v.optional(
    v.pipe(
      integerString(100),
      v.maxValue(5000, 'must be at most 5000 (Safaricom waits about 8 s for the whole answer)'),
    ),
    '3000',
  ),
  MPESA_REGISTER_URLS: v.optional(booleanString, 'true'),
};

/** Safaricom's M-Pesa Daraja API (docs/going-live.md). Secrets: never logged or shown. */
export type MpesaSettings = {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  shortcode: string;
  passkey: string;
  initiatorName: string;
  securityCredential: string;
  validationTimeoutMs: number;
  registerUrlsAtStart: boolean;
};

type Values = { [K in keyof typeof DARAJA_VARIABLES]: v.InferOutput<(typeof DARAJA_VARIABLES)[K]> };

/** On when MPESA_CONSUMER_KEY is set; then every MPESA_* value is required. */
export function readDarajaSettings(c: Values, problems: string[]): MpesaSettings | null {
  if (
    !connectorSwitch(
      'MPESA_CONSUMER_KEY',
      c,
      [
        'MPESA_CONSUMER_SECRET',
        'MPESA_SHORTCODE',
        'MPESA_PASSKEY',
        'MPESA_INITIATOR_NAME',
        'MPESA_SECURITY_CREDENTIAL',
      ],
      problems,
    )
  )
    return null;
  return {
    baseUrl: c.MPESA_BASE_URL,
    consumerKey: c.MPESA_CONSUMER_KEY!,
    consumerSecret: c.MPESA_CONSUMER_SECRET!,
    shortcode: c.MPESA_SHORTCODE!,
    passkey: c.MPESA_PASSKEY!,
    initiatorName: c.MPESA_INITIATOR_NAME!,
    securityCredential: c.MPESA_SECURITY_CREDENTIAL!,
    validationTimeoutMs: c.MPESA_VALIDATION_TIMEOUT_MS,
    registerUrlsAtStart: c.MPESA_REGISTER_URLS,
  };
}
