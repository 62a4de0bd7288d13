/**
 * What pawaPay takes, per provider: its providers in the service's markets (codes of
 * https://docs.pawapay.io/v2/docs/providers), and the limits of this merchant's account read from
 * `GET /v2/active-conf` (https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration):
 *
 *   { companyName, signatureConfiguration: { signedRequestsOnly, signedCallbacks },
 *     countries: [{ country: "TZA", displayName, prefix, flag,
 *       providers: [{ provider: "TIGO_TZA", displayName, logo, nameDisplayedToCustomer,
 *         currencies: [{ currency: "TZS", displayName,
 *           operationTypes: { DEPOSIT: { minAmount: "100", maxAmount: "1000000",
 *             decimalsInAmount: "NONE" | "TWO_PLACES", status: "OPERATIONAL" | "DELAYED" | "CLOSED",
 *             authType, pinPrompt, callbackUrl, … }, PAYOUT: {…}, REFUND: {…} } }] }] }] }
 *
 * The reference's example writes `operationTypes` as a list instead (entries `{ "DEPOSIT": {…} }` or
 * `{ "operationType": "PAYOUT", … }`) and the limits as `minTransactionLimit`/`maxTransactionLimit`
 * (their v1 names): all of these are read. Checking an amount against them before sending spares the
 * customer a prompt pawaPay would refuse (AMOUNT_OUT_OF_BOUNDS, INVALID_AMOUNT).
 */
import { groupedAmount } from '../../domain/money';

/**
 * pawaPay's providers in the service's markets, with the network each is in the service
 * (domain/networks.ts), its country (ours and pawaPay's ISO alpha-3), the currencies it carries and
 * its wallet's name as customers know it (Tigo Pesa is Mixx by Yas since the rebrand, Vodafone Cash
 * is Telecel Cash, AirtelTigo Money is AT Money). pawaPay lists no Airtel Kenya or Africell DRC.
 * Which of them this account may use, and the decimals each takes, come from active-conf.
 */
export const PAWAPAY_PROVIDERS: Readonly<
  Record<
    string,
    { network: string; country: string; pawapayCountry: string; currencies: readonly string[]; name: string }
  >
> = {
  VODACOM_TZA: {
    network: 'Vodacom Tanzania',
    country: 'TZ',
    pawapayCountry: 'TZA',
    currencies: ['TZS'],
    name: 'Vodacom M-Pesa',
  },
  TIGO_TZA: {
    network: 'Tigo Tanzania',
    country: 'TZ',
    pawapayCountry: 'TZA',
    currencies: ['TZS'],
    name: 'Mixx by Yas',
  },
  AIRTEL_TZA: {
    network: 'Airtel Tanzania',
    country: 'TZ',
    pawapayCountry: 'TZA',
    currencies: ['TZS'],
    name: 'Airtel Money',
  },
  HALOTEL_TZA: { network: 'Halotel', country: 'TZ', pawapayCountry: 'TZA', currencies: ['TZS'], name: 'HaloPesa' },
  MTN_MOMO_GHA: { network: 'MTN Ghana', country: 'GH', pawapayCountry: 'GHA', currencies: ['GHS'], name: 'MTN MoMo' },
  VODAFONE_GHA: {
    network: 'Telecel Ghana',
    country: 'GH',
    pawapayCountry: 'GHA',
    currencies: ['GHS'],
    name: 'Telecel Cash',
  },
  AIRTELTIGO_GHA: {
    network: 'AirtelTigo',
    country: 'GH',
    pawapayCountry: 'GHA',
    currencies: ['GHS'],
    name: 'AT Money',
  },
  VODACOM_MPESA_COD: {
    network: 'Vodacom DRC',
    country: 'CD',
    pawapayCountry: 'COD',
    currencies: ['CDF', 'USD'],
    name: 'Vodacom M-Pesa',
  },
  AIRTEL_COD: {
    network: 'Airtel DRC',
    country: 'CD',
    pawapayCountry: 'COD',
    currencies: ['CDF', 'USD'],
    name: 'Airtel Money',
  },
  ORANGE_COD: {
    network: 'Orange DRC',
    country: 'CD',
    pawapayCountry: 'COD',
    currencies: ['CDF', 'USD'],
    name: 'Orange Money',
  },
  MTN_MOMO_UGA: { network: 'MTN Uganda', country: 'UG', pawapayCountry: 'UGA', currencies: ['UGX'], name: 'MTN MoMo' },
  AIRTEL_OAPI_UGA: {
    network: 'Airtel Uganda',
    country: 'UG',
    pawapayCountry: 'UGA',
    currencies: ['UGX'],
    name: 'Airtel Money',
  },
  MPESA_KEN: { network: 'Safaricom', country: 'KE', pawapayCountry: 'KEN', currencies: ['KES'], name: 'M-Pesa' },
  MTN_MOMO_RWA: { network: 'MTN Rwanda', country: 'RW', pawapayCountry: 'RWA', currencies: ['RWF'], name: 'MTN MoMo' },
  AIRTEL_RWA: {
    network: 'Airtel Rwanda',
    country: 'RW',
    pawapayCountry: 'RWA',
    currencies: ['RWF'],
    name: 'Airtel Money',
  },
};

type Operation = 'DEPOSIT' | 'PAYOUT' | 'REFUND';
const OPERATIONS: readonly Operation[] = ['DEPOSIT', 'PAYOUT', 'REFUND'];

/** One operation of one provider in one currency, as the account has it. `decimals`: null when pawaPay did not say. */
type OperationLimits = {
  minAmount: string | null;
  maxAmount: string | null;
  decimals: 0 | 2 | null;
  status: string | null;
};
type ProviderLimits = {
  provider: string;
  country: string;
  displayName: string | null;
  currencies: Map<string, Partial<Record<Operation, OperationLimits>>>;
};
export type PawapayLimits = { signedCallbacks: boolean | null; providers: Map<string, ProviderLimits> };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null;

/** `operationTypes` as (operation, settings) pairs, whichever of the documented shapes it has. */
function operationEntries(value: unknown): [string, Record<string, unknown>][] {
  if (isRecord(value))
    return Object.entries(value).filter((entry): entry is [string, Record<string, unknown>] => isRecord(entry[1]));
  return listOf(value).flatMap((entry): [string, Record<string, unknown>][] => {
    if (!isRecord(entry)) return [];
    if (typeof entry.operationType === 'string') return [[entry.operationType, entry]];
    const keys = Object.keys(entry);
    const only = keys.length === 1 ? entry[keys[0]!] : undefined;
    return isRecord(only) ? [[keys[0]!, only]] : [];
  });
}

const DECIMALS: Readonly<Record<string, 0 | 2>> = { NONE: 0, TWO_PLACES: 2 };

function operationLimits(settings: Record<string, unknown>): OperationLimits {
  return {
    minAmount: text(settings.minAmount) ?? text(settings.minTransactionLimit),
    maxAmount: text(settings.maxAmount) ?? text(settings.maxTransactionLimit),
    decimals: DECIMALS[text(settings.decimalsInAmount) ?? ''] ?? null,
    status: text(settings.status),
  };
}

function currencyLimits(currency: Record<string, unknown>): Partial<Record<Operation, OperationLimits>> {
  const limits: Partial<Record<Operation, OperationLimits>> = {};
  for (const [operation, settings] of operationEntries(currency.operationTypes)) {
    if ((OPERATIONS as readonly string[]).includes(operation))
      limits[operation as Operation] = operationLimits(settings);
  }
  return limits;
}

/**
 * The account's providers and their limits from a `GET /v2/active-conf` answer; what is not of the documented shape is
 * left out.
 */
export function readActiveConf(body: unknown): PawapayLimits {
  const providers = new Map<string, ProviderLimits>();
  const root = isRecord(body) ? body : {};
  for (const country of listOf(root.countries).filter(isRecord)) {
    for (const provider of listOf(country.providers).filter(isRecord)) {
      const code = text(provider.provider);
      if (code === null) continue;
      const currencies = new Map<string, Partial<Record<Operation, OperationLimits>>>();
      for (const currency of listOf(provider.currencies).filter(isRecord)) {
        const name = text(currency.currency);
        if (name !== null) currencies.set(name, currencyLimits(currency));
      }
      providers.set(code, {
        provider: code,
        country: text(country.country) ?? '',
        displayName: text(provider.displayName),
        currencies,
      });
    }
  }
  const signed = isRecord(root.signatureConfiguration) ? root.signatureConfiguration.signedCallbacks : undefined;
  return { signedCallbacks: typeof signed === 'boolean' ? signed : null, providers };
}

const AMOUNT = /^(0|[1-9]\d*)(?:\.(\d+))?$/;

/** The decimals that matter (`100.50` → `5`, `100.00` → ``). */
const significantFraction = (amount: string): string => (AMOUNT.exec(amount)?.[2] ?? '').replace(/0+$/, '');

/** Compares two decimal strings of any length exactly: -1, 0 or 1. */
function compareAmounts(a: string, b: string): number {
  const [aWhole = '0', aFraction = ''] = a.split('.');
  const [bWhole = '0', bFraction = ''] = b.split('.');
  const places = Math.max(aFraction.length, bFraction.length);
  const left = BigInt(aWhole + aFraction.padEnd(places, '0'));
  const right = BigInt(bWhole + bFraction.padEnd(places, '0'));
  return left === right ? 0 : left < right ? -1 : 1;
}

/**
 * An amount as pawaPay takes it: a string, no leading zeros, and only the decimals that matter,
 * at most `decimals` of them (`1500.0000` → `1500`, `10.50` → `10.5` with 2). An amount with more
 * decimals than that throws rather than be rounded: `amountProblem` refuses it first.
 */
export function formatAmount(amount: string, decimals: number): string {
  const match = AMOUNT.exec(amount.trim());
  if (match === null) throw new RangeError(`${amount} is not an amount`);
  const fraction = significantFraction(amount.trim());
  if (fraction.length > decimals)
    throw new RangeError(`${amount} has more than ${decimals} decimal${decimals === 1 ? '' : 's'}`);
  return fraction === '' ? match[1]! : `${match[1]}.${fraction}`;
}

const NOUNS: Readonly<Record<Operation, [string, string]>> = {
  DEPOSIT: ['deposit', 'deposits'],
  PAYOUT: ['payout', 'payouts'],
  REFUND: ['refund', 'refunds'],
};

/** `Mixx by Yas (pawaPay)`: our name for the provider, else pawaPay's, else its code. */
const providerName = (table: PawapayLimits, provider: string): string =>
  `${PAWAPAY_PROVIDERS[provider]?.name ?? table.providers.get(provider)?.displayName ?? provider} (pawaPay)`;
const money = (currency: string, amount: string): string => `${currency} ${groupedAmount(amount)}`;

/** Why the account cannot take `operation` here at all (not enabled, currency not taken, closed), or null. */
function availabilityProblem(
  table: PawapayLimits,
  provider: string,
  currency: string,
  operation: Operation,
): string | null {
  const name = providerName(table, provider);
  const found = table.providers.get(provider);
  if (found === undefined) return `${name} is not enabled on this pawaPay account.`;
  const limits = found.currencies.get(currency);
  if (limits === undefined) {
    const taken = [...found.currencies.keys()];
    return `${name} does not take ${currency}${taken.length > 0 ? `; it takes ${taken.join(', ')}` : ''}.`;
  }
  const settings = limits[operation];
  if (settings === undefined)
    return `${name} is not enabled for ${NOUNS[operation][1]} in ${currency} on this pawaPay account.`;
  if (settings.status === 'CLOSED')
    return `${name} is not taking ${NOUNS[operation][1]} right now (pawaPay reports it closed); try again later.`;
  return null;
}

/** Why the amount breaks the decimals or a bound, naming the bound, or null. */
function boundsProblem(
  name: string,
  currency: string,
  amount: string,
  operation: Operation,
  settings: OperationLimits,
): string | null {
  const fraction = significantFraction(amount);
  if (settings.decimals === 0 && fraction !== '')
    return `${name} takes whole ${currency} amounts; ${amount} has decimals.`;
  if (settings.decimals !== null && fraction.length > settings.decimals)
    return `${name} takes ${currency} amounts with at most ${settings.decimals} decimals; ${amount} has more.`;
  const { minAmount: min, maxAmount: max } = settings;
  const per = `per ${NOUNS[operation][0]}`;
  const range =
    min !== null && max !== null
      ? `${money(currency, min)} to ${groupedAmount(max)} ${per}`
      : min !== null
        ? `at least ${money(currency, min)} ${per}`
        : `at most ${money(currency, max ?? '0')} ${per}`;
  const shown = money(currency, formatAmount(amount, fraction.length));
  if (min !== null && AMOUNT.test(min) && compareAmounts(amount, min) < 0)
    return `${name} takes ${range}; ${shown} is below the minimum.`;
  if (max !== null && AMOUNT.test(max) && compareAmounts(amount, max) > 0)
    return `${name} takes ${range}; ${shown} is above the maximum.`;
  return null;
}

/**
 * Why pawaPay would refuse `amount` in `currency` for `operation` through `provider` on this account
 * (per `readActiveConf`), in a merchant's words, or null when it is within what the account takes:
 * "Mixx by Yas (pawaPay) takes TZS 100 to 1,000,000 per deposit; TZS 50 is below the minimum."
 */
export function amountProblem(
  table: PawapayLimits,
  provider: string,
  currency: string,
  amount: string,
  operation: Operation,
): string | null {
  const unavailable = availabilityProblem(table, provider, currency, operation);
  if (unavailable !== null) return unavailable;
  const trimmed = amount.trim();
  if (!AMOUNT.test(trimmed) || compareAmounts(trimmed, '0') <= 0)
    return `${amount} is not an amount pawaPay takes (a positive number, like 1500 or 10.50).`;
  const settings = table.providers.get(provider)!.currencies.get(currency)![operation]!;
  return boundsProblem(providerName(table, provider), currency, trimmed, operation, settings);
}
