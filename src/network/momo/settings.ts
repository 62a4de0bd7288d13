/**
 * The settings of the MTN MoMo connector, one market per network, declared here and read with the rest of the
 * configuration.
 */
import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { connectorSwitch, httpUrl, secret } from '../../config-values';

/**
 * The MTN MoMo markets the service knows: the network each target environment serves, and the
 * currency it moves there. MoMo's own `sandbox` environment (EUR at MoMo) may stand in for any of them.
 */
export const MOMO_MARKETS = [
  { targetEnvironment: 'mtnuganda', network: 'MTN Uganda', currency: 'UGX' },
  { targetEnvironment: 'mtnghana', network: 'MTN Ghana', currency: 'GHS' },
  { targetEnvironment: 'mtnrwanda', network: 'MTN Rwanda', currency: 'RWF' },
] as const;
export const MOMO_SANDBOX_ENVIRONMENT = 'sandbox';
/** The market of the single-market MTN_MOMO_* variables unless their target environment names another. */
const DEFAULT_MARKET = MOMO_MARKETS[0];

export const MOMO_VARIABLES = {
  // MTN MoMo, one market (MTN Uganda, UGX, unless the target environment names another market): on when
  // MTN_MOMO_COLLECTION_API_USER is set; then every MTN_MOMO_* value is required.
  MTN_MOMO_BASE_URL: v.optional(httpUrl, 'https://proxy.momoapi.mtn.com'),
  MTN_MOMO_TARGET_ENVIRONMENT: v.optional(
    v.pipe(v.string(), v.regex(/^[a-z0-9]+$/, 'must be a MoMo target environment such as mtnuganda or sandbox')),
    'mtnuganda',
  ),
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: v.optional(secret),
  MTN_MOMO_COLLECTION_API_USER: v.optional(secret),
  MTN_MOMO_COLLECTION_API_KEY: v.optional(secret),
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: v.optional(secret),
  MTN_MOMO_DISBURSEMENT_API_USER: v.optional(secret),
  MTN_MOMO_DISBURSEMENT_API_KEY: v.optional(secret),
  // More MTN MoMo markets, each with its own credentials: a JSON file (docs/configuration.md), read and checked at
  // start.
  MTN_MOMO_MARKETS_FILE: v.optional(v.pipe(v.string(), v.minLength(1))),
};

export type MomoProduct = { subscriptionKey: string; apiUser: string; apiKey: string };
/**
 * One MTN MoMo market of the MoMo Open API (collection and disbursement products): the network it
 * serves and the currency it moves (`MOMO_MARKETS`). Secrets: never logged or shown.
 */
export type MomoSettings = {
  baseUrl: string;
  targetEnvironment: string;
  network: string;
  currency: string;
  collection: MomoProduct;
  disbursement: MomoProduct;
};

type Parsed = { [K in keyof typeof MOMO_VARIABLES]: v.InferOutput<(typeof MOMO_VARIABLES)[K]> };

const momoProduct = v.object(
  {
    subscription_key: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
    api_user: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
    api_key: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  },
  'must be an object of subscription_key, api_user and api_key',
);
/** One market of MTN_MOMO_MARKETS_FILE. */
const MomoMarketEntry = v.object(
  {
    target_environment: v.pipe(
      v.string('must be a string'),
      v.regex(/^[a-z0-9]+$/, 'must be a MoMo target environment such as mtnghana'),
    ),
    base_url: v.optional(httpUrl, 'https://proxy.momoapi.mtn.com'),
    currency: v.pipe(v.string('must be a string'), v.regex(/^[A-Z]{3}$/, 'must be a 3-letter currency code')),
    collection: momoProduct,
    disbursement: momoProduct,
  },
  'must be an object',
);

/**
 * The network a MoMo market serves: its target environment's (`MOMO_MARKETS`), or for MoMo's
 * sandbox environment the market whose currency it names; a problem for any other pairing.
 */
function momoMarketNetwork(
  targetEnvironment: string,
  currency: string,
): { network: string; problem?: undefined } | { network?: undefined; problem: string } {
  const known = MOMO_MARKETS.find((market) => market.targetEnvironment === targetEnvironment);
  const byCurrency = MOMO_MARKETS.find((market) => market.currency === currency);
  const pairs = MOMO_MARKETS.map((market) => `${market.targetEnvironment} with ${market.currency}`).join(', ');
  if (known && known.currency === currency) return { network: known.network };
  if (targetEnvironment === MOMO_SANDBOX_ENVIRONMENT && byCurrency) return { network: byCurrency.network };
  if (known) return { problem: `target environment ${targetEnvironment} moves ${known.currency}, not ${currency}` };
  return {
    problem: [
      `unknown target environment and currency pairing ${targetEnvironment} with ${currency}`,
      `(known: ${pairs}, or ${MOMO_SANDBOX_ENVIRONMENT} with one of their currencies)`,
    ].join(' '),
  };
}

/** What MTN_MOMO_MARKETS_FILE holds: its markets, or the problems that make it unusable. */
function readMomoMarketsFile(path: string, problems: string[]): MomoSettings[] {
  const problem = (text: string) => problems.push(`MTN_MOMO_MARKETS_FILE: ${text}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    problem(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return [];
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    problem(`${path} is not valid JSON (${(error as Error).message})`);
    return [];
  }
  if (!Array.isArray(parsed)) {
    problem(`${path} must hold a JSON array of markets`);
    return [];
  }
  return parsed.flatMap((entry, index) => {
    const result = v.safeParse(MomoMarketEntry, entry);
    if (!result.success) {
      for (const issue of result.issues) {
        const said = issue.received === 'undefined' ? 'missing' : issue.message;
        problem(`market ${index + 1}: ${v.getDotPath(issue) ?? 'market'}: ${said}`);
      }
      return [];
    }
    const {
      target_environment: targetEnvironment,
      base_url: baseUrl,
      currency,
      collection,
      disbursement,
    } = result.output;
    const market = momoMarketNetwork(targetEnvironment, currency);
    if (market.problem !== undefined) {
      problem(`market ${index + 1}: ${market.problem}`);
      return [];
    }
    const product = (keys: typeof collection): MomoProduct => ({
      subscriptionKey: keys.subscription_key,
      apiUser: keys.api_user,
      apiKey: keys.api_key,
    });
    return [
      {
        baseUrl,
        targetEnvironment,
        network: market.network,
        currency,
        collection: product(collection),
        disbursement: product(disbursement),
      },
    ];
  });
}

/**
 * Every MTN MoMo market: the single-market MTN_MOMO_* variables (MTN Uganda unless their target
 * environment names another market) and those of MTN_MOMO_MARKETS_FILE; one market per network.
 */
export function readMomoSettings(c: Parsed, problems: string[]): MomoSettings[] {
  const single = connectorSwitch(
    'MTN_MOMO_COLLECTION_API_USER',
    c,
    [
      'MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY',
      'MTN_MOMO_COLLECTION_API_KEY',
      'MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY',
      'MTN_MOMO_DISBURSEMENT_API_USER',
      'MTN_MOMO_DISBURSEMENT_API_KEY',
    ],
    problems,
  );
  const markets: MomoSettings[] = [];
  if (single) {
    const named = MOMO_MARKETS.find((market) => market.targetEnvironment === c.MTN_MOMO_TARGET_ENVIRONMENT);
    markets.push({
      baseUrl: c.MTN_MOMO_BASE_URL,
      targetEnvironment: c.MTN_MOMO_TARGET_ENVIRONMENT,
      network: named?.network ?? DEFAULT_MARKET.network,
      currency: named?.currency ?? DEFAULT_MARKET.currency,
      collection: {
        subscriptionKey: c.MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY!,
        apiUser: c.MTN_MOMO_COLLECTION_API_USER!,
        apiKey: c.MTN_MOMO_COLLECTION_API_KEY!,
      },
      disbursement: {
        subscriptionKey: c.MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY!,
        apiUser: c.MTN_MOMO_DISBURSEMENT_API_USER!,
        apiKey: c.MTN_MOMO_DISBURSEMENT_API_KEY!,
      },
    });
  }
  if (c.MTN_MOMO_MARKETS_FILE !== undefined) markets.push(...readMomoMarketsFile(c.MTN_MOMO_MARKETS_FILE, problems));
  const seen = new Map<string, string>();
  markets.forEach((market, index) => {
    const where =
      single && index === 0
        ? 'the MTN_MOMO_* variables'
        : `market ${single ? index : index + 1} of MTN_MOMO_MARKETS_FILE`;
    const first = seen.get(market.network);
    if (first !== undefined) {
      const named = `${market.network} (${market.currency})`;
      problems.push(`MTN_MOMO_MARKETS_FILE: duplicate market: ${named} is configured by ${first} and by ${where}`);
    } else seen.set(market.network, where);
  });
  return markets;
}
