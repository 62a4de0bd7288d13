import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** The sandbox network's test numbers (spec facts): valid here though no real plan has them. */
const SANDBOX_TEST_NUMBER = /^\+800000000\d{2}$/;

/** Adds the `+` that api.md lets callers leave out, and drops spaces, dots, dashes, brackets. */
export function withLeadingPlus(input: string): string {
  const compact = input.trim().replace(/[\s().-]/g, '');
  return compact.startsWith('+') ? compact : `+${compact}`;
}

/**
 * Normalises a number in international format to E.164, or returns null when it cannot be a phone
 * number (libphonenumber's `isPossible`: a known country code and a possible length). Validity per
 * numbering plan is deliberately not asked: plans change faster than metadata, and real clients
 * send numbers whose prefix the metadata does not list yet (DESIGN.md, Data).
 */
export function normalizePhoneNumber(input: string): string | null {
  const candidate = withLeadingPlus(input);
  if (SANDBOX_TEST_NUMBER.test(candidate)) return candidate;
  if (!/^\+\d{6,16}$/.test(candidate)) return null;
  const parsed = parsePhoneNumberFromString(candidate);
  if (!parsed || !parsed.isPossible()) return null;
  return parsed.number;
}

export const isSandboxTestNumber = (e164: string): boolean => SANDBOX_TEST_NUMBER.test(e164);
