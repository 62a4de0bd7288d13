/** Amounts stay decimal strings end to end (numeric(20,4) in PostgreSQL), never JS floats. */

/**
 * Every currency the service handles, the one place that says so: `id` is the `currencies` row
 * (version 1's numeric id, migrations 001 and 022 insert the same), `countries` the ISO 3166 codes
 * whose networks carry it (none for BXC, the sandbox currency, which any network's numbers take in
 * sandbox mode), `decimals` its minor units: the most decimals an amount in it may have (BXC takes
 * the four every stored amount has). A country may have two currencies (the DRC: CDF and USD).
 */
export const CURRENCIES = [
  { id: 1, code: 'BXC', name: 'Sandbox currency', countries: [], decimals: 4 },
  { id: 2, code: 'UGX', name: 'Ugandan shilling', countries: ['UG'], decimals: 0 },
  { id: 3, code: 'KES', name: 'Kenyan shilling', countries: ['KE'], decimals: 2 },
  { id: 4, code: 'TZS', name: 'Tanzanian shilling', countries: ['TZ'], decimals: 0 },
  { id: 5, code: 'RWF', name: 'Rwandan franc', countries: ['RW'], decimals: 0 },
  { id: 6, code: 'GHS', name: 'Ghanaian cedi', countries: ['GH'], decimals: 2 },
  { id: 7, code: 'CDF', name: 'Congolese franc', countries: ['CD'], decimals: 2 },
  { id: 8, code: 'USD', name: 'US dollar', countries: ['CD'], decimals: 2 },
] as const satisfies readonly {
  id: number;
  code: string;
  name: string;
  countries: readonly string[];
  decimals: number;
}[];

export type Currency = (typeof CURRENCIES)[number]['code'];
export const SUPPORTED_CURRENCIES = CURRENCIES.map((currency) => currency.code) as [Currency, ...Currency[]];

/** The currencies whose networks are in `country`, in the table's order. */
export const currenciesOfCountry = (country: string): Currency[] =>
  CURRENCIES.filter((currency) => (currency.countries as readonly string[]).includes(country)).map(
    (currency) => currency.code,
  );

/** The countries whose networks carry `currency` (none for BXC or an unknown code). */
export const countriesOfCurrency = (code: string): readonly string[] =>
  CURRENCIES.find((currency) => currency.code === code)?.countries ?? [];

/** `UGX, KES and TZS`: codes for messages and documentation. */
export const listedCodes = (codes: readonly string[]): string =>
  codes.length <= 1 ? codes.join('') : `${codes.slice(0, -1).join(', ')} and ${codes[codes.length - 1]}`;

/** The minor units of `code` (null for a code the service does not handle). */
export const currencyDecimals = (code: string): number | null =>
  CURRENCIES.find((currency) => currency.code === code)?.decimals ?? null;

/**
 * Why `amount` has more decimals than `currency` has minor units (null when it has not): trailing
 * zeros do not count, so `1500.0000` is a whole amount.
 */
export function currencyAmountProblem(code: string, amount: string): string | null {
  const allowed = currencyDecimals(code);
  if (allowed === null) return null;
  const decimals = (amount.split('.')[1] ?? '').replace(/0+$/, '').length;
  if (decimals <= allowed) return null;
  return allowed === 0
    ? `${code} has no minor unit: enter ${code} without decimals.`
    : `${code} takes at most ${allowed} decimals.`;
}

/**
 * The largest amount a merchant, a network or a payment may move at once. numeric(20,4) holds 16
 * digits before the point; with at most 10 here, a wallet takes ten million credits of the largest
 * amount before its sum could leave the column, so no accepted amount can overflow later.
 */
export const MAX_AMOUNT = '1000000000';
/** What an operator may fund a wallet with at once (admin CLI): larger, still far inside the column. */
export const MAX_FUNDING_AMOUNT = '1000000000000';

/** Compares two non-negative decimal strings without floats: -1, 0 or 1. */
export function compareDecimal(a: string, b: string): number {
  const [aWhole = '', aFraction = ''] = a.split('.');
  const [bWhole = '', bFraction = ''] = b.split('.');
  if (aWhole.length !== bWhole.length) return aWhole.length < bWhole.length ? -1 : 1;
  const left = aWhole + aFraction.padEnd(4, '0');
  const right = bWhole + bFraction.padEnd(4, '0');
  return left === right ? 0 : left < right ? -1 : 1;
}

/**
 * What is wrong with an amount as sent (already trimmed), the first rule it breaks, or null when it
 * is a positive decimal with at most 4 decimals and at most `max`. Each message names the fault
 * itself (a sign, leading zeros, too many decimals...), so a merchant can correct it from the
 * message alone; the currency's own minor units are `currencyAmountProblem`'s.
 */
export function amountProblem(text: string, max: string = MAX_AMOUNT): string | null {
  if (/^\d{1,3}(?:[,\s]\d{3})+(?:\.\d+)?$/.test(text))
    return 'A valid number is required; leave out thousands separators.';
  if (/^[+-]/.test(text)) return 'Enter the amount without a sign: an amount is always positive.';
  if (/\s/.test(text)) return 'Enter the amount without spaces.';
  if (/^(?:\d+\.?\d*|\.\d+)e[+-]?\d+$/i.test(text))
    return 'Enter the amount in plain digits, without an exponent (100, not 1e2).';
  if (/^(?:\.\d+|\d+\.)$/.test(text)) return 'Enter digits on both sides of the decimal point (0.5, not .5).';
  if (!/^\d+(?:\.\d+)?$/.test(text)) return 'A valid number is required.';
  if (/^0\d/.test(text)) return 'Enter the amount without leading zeros (100, not 0100).';
  if (/^0(?:\.0+)?$/.test(text)) return 'Ensure this value is greater than 0.';
  if ((text.split('.')[1] ?? '').length > 4) return 'Ensure there are no more than 4 decimal places.';
  if (text.split('.')[0]!.length > 16 || compareDecimal(text, max) > 0)
    return `Ensure this value is at most ${groupedAmount(max)}.`;
  return null;
}

/** A positive amount with at most 4 decimals, no thousands separators and at most `max`, or null. */
export function parsePositiveAmount(input: string, max: string = MAX_AMOUNT): string | null {
  const text = input.trim();
  return amountProblem(text, max) === null ? text : null;
}

export function isCurrency(code: string): code is Currency {
  return (SUPPORTED_CURRENCIES as readonly string[]).includes(code);
}

/** `1000000000` → `1,000,000,000` and `1000.0000` → `1,000.0000`, for messages: only the whole part is grouped. */
export const groupedAmount = (amount: string): string => {
  const [whole = '', fraction] = amount.split('.');
  return `${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction === undefined ? '' : `.${fraction}`}`;
};

/** A decimal string (at most 4 decimals, optionally negative) in ten-thousandths. */
function units(amount: string): bigint {
  const negative = amount.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? amount.slice(1) : amount).split('.');
  const value = BigInt((whole || '0') + fraction.padEnd(4, '0').slice(0, 4));
  return negative ? -value : value;
}

/** Ten-thousandths as a decimal string with four decimals, `-` when negative. */
function fromUnits(total: bigint): string {
  const digits = (total < 0n ? -total : total).toString().padStart(5, '0');
  return `${total < 0n ? '-' : ''}${digits.slice(0, -4)}.${digits.slice(-4)}`;
}

/** The exact sum of non-negative decimal strings, with four decimals (BigInt in ten-thousandths: no float ever). */
export function sumAmounts(amounts: Iterable<string>): string {
  let total = 0n;
  for (const amount of amounts) total += units(amount);
  return fromUnits(total);
}

/** `minuend` less every one of `subtrahends`, exactly, with four decimals (negative when they weigh more). */
export function differenceOf(minuend: string, ...subtrahends: string[]): string {
  return fromUnits(subtrahends.reduce((total, amount) => total - units(amount), units(minuend)));
}
