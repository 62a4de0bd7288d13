import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** The sandbox network's test numbers (docs/api.md#contacts): valid here though no real plan has them. */
const SANDBOX_TEST_NUMBER = /^\+800000000\d{2}$/;

/**
 * Adds the `+` that callers may leave out (docs/api.md#api-behaviour-worth-knowing), and drops spaces, dots, dashes,
 * brackets.
 */
export function withLeadingPlus(input: string): string {
  const compact = input.trim().replace(/[\s().-]/g, '');
  return compact.startsWith('+') ? compact : `+${compact}`;
}

/**
 * Normalises a number in international format to E.164, or returns null when it cannot be a phone
 * number (libphonenumber's `isPossible`: a known country code and a possible length). Validity per
 * numbering plan is deliberately not asked: plans change faster than metadata, and real clients
 * send numbers whose prefix the metadata does not list yet (docs/api.md#contacts).
 */
export function normalizePhoneNumber(input: string): string | null {
  const candidate = withLeadingPlus(input);
  if (SANDBOX_TEST_NUMBER.test(candidate)) return candidate;
  if (!/^\+\d{6,16}$/.test(candidate)) return null;
  const parsed = parsePhoneNumberFromString(candidate);
  if (!parsed?.isPossible()) return null;
  return parsed.number;
}

export const isSandboxTestNumber = (e164: string): boolean => SANDBOX_TEST_NUMBER.test(e164);

/**
 * Whether a full number fits the form an operator gave the payer's number in: in full (`254…`),
 * masked (`2547****149`, `2547 ***** 149`: the visible digits at both ends must agree), or hashed
 * (SHA-256 hex of the digits, as live Daraja sends it). `hash` computes SHA-256 hex (kept out of
 * this pure module).
 */
export function numberFitsMask(e164: string, given: string, hash: (text: string) => string): boolean {
  const digits = e164.replace(/^\+/, '');
  const compact = given.replace(/\s+/g, '').replace(/^\+/, '');
  if (/^\d+$/.test(compact)) return compact === digits;
  if (/^[0-9a-f]{64}$/i.test(compact))
    return [digits, `+${digits}`, digits.replace(/^254/, '0')].some((form) => hash(form) === compact.toLowerCase());
  const masked = /^(\d*)[*xX]+(\d*)$/.exec(compact);
  if (!masked) return false;
  const [, head = '', tail = ''] = masked;
  return (
    head.length + tail.length > 0 &&
    head.length + tail.length < digits.length &&
    digits.startsWith(head) &&
    digits.endsWith(tail)
  );
}

/** The payer's number as an operator gave it, in E.164 when it came in full; null when masked or hashed. */
export function fullNumberOf(given: string): string | null {
  const compact = given.replace(/\s+/g, '').replace(/^\+/, '');
  return /^\d{9,15}$/.test(compact) ? normalizePhoneNumber(compact) : null;
}
