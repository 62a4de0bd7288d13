/**
 * The settings of the Vodacom M-Pesa connector (the M-Pesa OpenAPI), declared here and read with the rest of the
 * configuration.
 */
import { createPublicKey } from 'node:crypto';
import * as v from 'valibot';
import { connectorSwitch, httpUrl, integerString, secret } from '../../config-values';

/**
 * The Vodacom markets of the M-Pesa OpenAPI the service knows: the market code its calls name
 * (`input_Country`), the API context of its URLs, the network it serves, and the currencies it may
 * move there (the first is the default; VODACOM_MARKETS names another: `DRC:CDF`).
 */
export const VODACOM_MARKETS = [
  { market: 'TZN', context: 'vodacomTZN', network: 'Vodacom Tanzania', currencies: ['TZS'] },
  { market: 'DRC', context: 'vodacomDRC', network: 'Vodacom DRC', currencies: ['USD', 'CDF'] },
] as const;

export const VODACOM_VARIABLES = {
  // Vodacom M-Pesa (the M-Pesa OpenAPI): on when VODACOM_API_KEY is set; then VODACOM_PUBLIC_KEY,
  // VODACOM_SERVICE_PROVIDER_CODE and VODACOM_MARKETS are required. The base URL is the environment's root.
  VODACOM_BASE_URL: v.optional(httpUrl, 'https://openapi.m-pesa.com/openapi'),
  VODACOM_API_KEY: v.optional(secret),
  VODACOM_PUBLIC_KEY: v.optional(
    v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/=\s]+$/, 'must be the base64 public key from the portal')),
  ),
  VODACOM_SERVICE_PROVIDER_CODE: v.optional(
    v.pipe(v.string(), v.regex(/^\d{4,10}$/, 'must be the digits of the service provider code (shortcode)')),
  ),
  VODACOM_MARKETS: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^\s*[A-Za-z]{3}(:[A-Za-z]{3})?\s*(,\s*[A-Za-z]{3}(:[A-Za-z]{3})?\s*)*$/,
        'must be markets such as TZN,DRC (a currency may follow a colon: DRC:CDF)',
      ),
    ),
  ),
  VODACOM_ORIGIN: v.optional(v.pipe(v.string(), v.minLength(1)), '*'),
  // A new session is not usable at once: M-Pesa documents "up to 30 seconds". A spare is used this long after it was
  // issued; a call with no other session tries a new one sooner, until M-Pesa takes it (src/network/session-pool.ts).
  VODACOM_SESSION_ACTIVATION_SECONDS: v.optional(v.pipe(integerString(0), v.maxValue(300)), '30'),
  // How long a session lasts from its issue (the application's setting in the portal): its successor is asked for ahead
  // of that.
  VODACOM_SESSION_LIFETIME_SECONDS: v.optional(v.pipe(integerString(1), v.maxValue(604_800)), '3600'),
};

type Parsed = { [K in keyof typeof VODACOM_VARIABLES]: v.InferOutput<(typeof VODACOM_VARIABLES)[K]> };

/**
 * A Vodacom market of the M-Pesa OpenAPI: its code (`input_Country`), API context, network and the currency its calls
 * move.
 */
export type VodacomMarket = { market: string; context: string; network: string; currency: string };
/**
 * The M-Pesa OpenAPI (sessions, C2B, B2C, reversals, transaction status, beneficiary names). Secrets: never logged or
 * shown.
 */
export type VodacomSettings = {
  /**
   * The environment's root (`https://openapi.m-pesa.com/sandbox` or `.../openapi`); calls go to
   * `<root>/ipg/v2/<context>/...`.
   */
  baseUrl: string;
  apiKey: string;
  /** The portal's public key (base64 DER), which encrypts the API key and every session id. */
  publicKey: string;
  serviceProviderCode: string;
  origin: string;
  markets: readonly VodacomMarket[];
  sessionActivationMs: number;
  /** How long a session lasts from its issue; always more than two activation delays. */
  sessionLifetimeMs: number;
};

/** VODACOM_MARKETS as markets with their currency; what is wrong with it goes to `problems`. */
function vodacomMarketsOf(value: string, problems: string[]): VodacomMarket[] {
  const markets: VodacomMarket[] = [];
  for (const entry of value.split(',').map((part) => part.trim().toUpperCase())) {
    const [code = '', named] = entry.split(':');
    const known = VODACOM_MARKETS.find((market) => market.market === code);
    if (!known) {
      const served = VODACOM_MARKETS.map((market) => market.market).join(', ');
      problems.push(`VODACOM_MARKETS: ${code} is not a Vodacom market this service knows (${served})`);
      continue;
    }
    const currencies: readonly string[] = known.currencies;
    const currency = named ?? currencies[0]!;
    if (!currencies.includes(currency))
      problems.push(`VODACOM_MARKETS: Vodacom M-Pesa in ${code} moves ${currencies.join(' or ')}, not ${currency}`);
    else if (markets.some((served) => served.market === code)) problems.push(`VODACOM_MARKETS: ${code} is named twice`);
    else markets.push({ market: code, context: known.context, network: known.network, currency });
  }
  return markets;
}

/** Whether VODACOM_PUBLIC_KEY is an RSA public key (base64 DER, SubjectPublicKeyInfo) as the portal shows it. */
function vodacomKeyProblem(publicKey: string): string | null {
  try {
    const key = createPublicKey({
      key: Buffer.from(publicKey.replace(/\s+/g, ''), 'base64'),
      format: 'der',
      type: 'spki',
    });
    return key.asymmetricKeyType === 'rsa' ? null : 'VODACOM_PUBLIC_KEY: must be an RSA public key';
  } catch {
    return 'VODACOM_PUBLIC_KEY: not a base64 DER public key (copy it from the portal as shown)';
  }
}

export function readVodacomSettings(c: Parsed, problems: string[]): VodacomSettings | null {
  if (
    !connectorSwitch(
      'VODACOM_API_KEY',
      c,
      ['VODACOM_PUBLIC_KEY', 'VODACOM_SERVICE_PROVIDER_CODE', 'VODACOM_MARKETS'],
      problems,
    )
  )
    return null;
  const publicKey = (c.VODACOM_PUBLIC_KEY ?? '').replace(/\s+/g, '');
  const keyProblem = publicKey === '' ? null : vodacomKeyProblem(publicKey);
  if (keyProblem !== null) problems.push(keyProblem);
  // A session must serve longer than its successor takes to become active, or calls would wait for sessions.
  if (c.VODACOM_SESSION_LIFETIME_SECONDS <= 2 * c.VODACOM_SESSION_ACTIVATION_SECONDS) {
    const activation = c.VODACOM_SESSION_ACTIVATION_SECONDS;
    problems.push(
      `VODACOM_SESSION_LIFETIME_SECONDS: must be more than twice VODACOM_SESSION_ACTIVATION_SECONDS (${activation})`,
    );
  }
  return {
    baseUrl: c.VODACOM_BASE_URL,
    apiKey: c.VODACOM_API_KEY!,
    publicKey,
    serviceProviderCode: c.VODACOM_SERVICE_PROVIDER_CODE ?? '',
    origin: c.VODACOM_ORIGIN,
    markets: vodacomMarketsOf(c.VODACOM_MARKETS ?? '', problems),
    sessionActivationMs: c.VODACOM_SESSION_ACTIVATION_SECONDS * 1000,
    sessionLifetimeMs: c.VODACOM_SESSION_LIFETIME_SECONDS * 1000,
  };
}
