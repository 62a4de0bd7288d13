/** Amounts stay decimal strings end to end (numeric(20,4) in PostgreSQL), never JS floats. */
export const SUPPORTED_CURRENCIES = ['BXC', 'UGX', 'KES'] as const;
export type Currency = (typeof SUPPORTED_CURRENCIES)[number];

const DECIMAL = /^(?:0|[1-9]\d{0,15})(?:\.\d{1,4})?$/;

/** A positive amount with at most 4 decimals and no thousands separators, or null. */
export function parsePositiveAmount(input: string): string | null {
  const text = input.trim();
  if (!DECIMAL.test(text) || /^0(?:\.0+)?$/.test(text)) return null;
  return text;
}

export function isCurrency(code: string): code is Currency {
  return (SUPPORTED_CURRENCIES as readonly string[]).includes(code);
}
