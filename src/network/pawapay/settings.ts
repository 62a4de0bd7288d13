/**
 * The settings of the pawaPay connector (Merchant API v2), declared here and read with the rest of the configuration.
 */
import * as v from 'valibot';
import { booleanString, connectorSwitch, httpUrl, integerString, secret } from '../../config-values';
import { PAWAPAY_PROVIDERS } from './limits';

/** A provider the merchant's pawaPay account is enabled for, and the service's network it reaches. */
type PawapayProvider = { code: string; network: string; currencies: readonly string[]; name: string };

export const PAWAPAY_VARIABLES = {
  // pawaPay (Merchant API v2), for the networks no direct connector serves: on when PAWAPAY_API_TOKEN is set;
  // then PAWAPAY_PROVIDERS is required. Sandbox: https://api.sandbox.pawapay.io.
  PAWAPAY_BASE_URL: v.optional(httpUrl, 'https://api.pawapay.io'),
  PAWAPAY_API_TOKEN: v.optional(secret),
  PAWAPAY_PROVIDERS: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\s*[A-Za-z_]+\s*(,\s*[A-Za-z_]+\s*)*$/, 'must be provider codes such as TIGO_TZA,HALOTEL_TZA'),
    ),
  ),
  // With signed callbacks enabled in pawaPay's dashboard: a callback without a valid signature is refused.
  PAWAPAY_SIGNED_CALLBACKS: v.optional(booleanString, 'false'),
  // How often the providers' limits (GET /v2/active-conf) are read again.
  PAWAPAY_CONF_REFRESH_SECONDS: v.optional(v.pipe(integerString(10), v.maxValue(86_400)), '300'),
};

/** pawaPay's Merchant API v2. Secrets: never logged or shown. */
export type PawapaySettings = {
  baseUrl: string;
  apiToken: string;
  /** The providers the merchant's pawaPay account is enabled for, each reaching one network. */
  providers: readonly PawapayProvider[];
  signedCallbacks: boolean;
  confRefreshMs: number;
};

type Values = { [K in keyof typeof PAWAPAY_VARIABLES]: v.InferOutput<(typeof PAWAPAY_VARIABLES)[K]> };

/** PAWAPAY_PROVIDERS as providers; what is wrong with it goes to `problems`. */
function providersOf(value: string, problems: string[]): PawapayProvider[] {
  const providers: PawapayProvider[] = [];
  for (const code of value.split(',').map((part) => part.trim().toUpperCase())) {
    const known = PAWAPAY_PROVIDERS[code];
    if (!known) {
      const served = Object.keys(PAWAPAY_PROVIDERS).join(', ');
      problems.push(`PAWAPAY_PROVIDERS: ${code} is not a pawaPay provider this service knows (${served})`);
    } else if (providers.some((provider) => provider.code === code))
      problems.push(`PAWAPAY_PROVIDERS: ${code} is named twice`);
    else if (providers.some((provider) => provider.network === known.network))
      problems.push(`PAWAPAY_PROVIDERS: ${code} reaches ${known.network}, which another provider named reaches`);
    else providers.push({ code, network: known.network, currencies: known.currencies, name: known.name });
  }
  return providers;
}

export function readPawapaySettings(c: Values, problems: string[]): PawapaySettings | null {
  if (!connectorSwitch('PAWAPAY_API_TOKEN', c, ['PAWAPAY_PROVIDERS'], problems)) return null;
  return {
    baseUrl: c.PAWAPAY_BASE_URL,
    apiToken: c.PAWAPAY_API_TOKEN!,
    providers: providersOf(c.PAWAPAY_PROVIDERS ?? '', problems),
    signedCallbacks: c.PAWAPAY_SIGNED_CALLBACKS,
    confRefreshMs: c.PAWAPAY_CONF_REFRESH_SECONDS * 1000,
  };
}
