/**
 * Email addresses: the one form the service stores, looks up and counts sign-in attempts by, and
 * the one rule that refuses addresses a person cannot tell apart from another (invisible
 * characters, letters of several scripts in one part), wherever an email is taken: console users
 * (console, admin CLI), sign-in, and the email schema of src/domain/input.ts.
 */
import { domainToUnicode } from 'node:url';
import * as v from 'valibot';

/**
 * The one form of an email address: trimmed, Unicode NFKC, lower-cased by JavaScript's rules.
 * NFKC rather than NFC: compatibility forms that look like plain letters (full-width `ｐ`) become
 * those letters, so they cannot make a second account that reads the same. Comparing this form for
 * equality (never PostgreSQL's `lower()`, whose case rules differ: `İ` is `i` there and `i̇` here)
 * means an address that finds an account is the same text that counts against it.
 */
export function normalizeEmail(input: string): string {
  return input.trim().normalize('NFKC').toLowerCase();
}

export const EMAIL_MAX_LENGTH = 254;
export const INVALID_EMAIL = 'Enter a valid email address.';
const SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/u;

/**
 * What no address may hold: control, format (zero-width space, joiner and non-joiner, BOM, bidi
 * controls), unassigned, private-use and surrogate code points (`\p{C}`), separators (`\p{Z}`),
 * and whatever else renders as nothing (`Default_Ignorable_Code_Point`: the soft hyphen, variation
 * selectors, the Hangul fillers), plus the blank braille pattern.
 */
const INVISIBLE = /[\p{C}\p{Z}\p{Default_Ignorable_Code_Point}\u2800]/u;
const INVISIBLE_MESSAGE = [
  'Enter the email address without invisible or control characters',
  '(such as zero-width spaces, soft hyphens or direction marks).',
].join(' ');

/**
 * The scripts told apart by name. A letter of any other script counts as one more script, so it is
 * never taken together with Latin (or any script named here); two scripts both missing from this
 * list cannot be told apart from each other, which lets no Latin look-alike through.
 */
const SCRIPTS = [
  'Latin',
  'Greek',
  'Cyrillic',
  'Armenian',
  'Georgian',
  'Hebrew',
  'Arabic',
  'Syriac',
  'Thaana',
  'Nko',
  'Devanagari',
  'Bengali',
  'Gurmukhi',
  'Gujarati',
  'Oriya',
  'Tamil',
  'Telugu',
  'Kannada',
  'Malayalam',
  'Sinhala',
  'Thai',
  'Lao',
  'Tibetan',
  'Myanmar',
  'Khmer',
  'Mongolian',
  'Ethiopic',
  'Cherokee',
  'Canadian_Aboriginal',
  'Tifinagh',
  'Coptic',
  'Lisu',
  'Vai',
  'Han',
  'Hiragana',
  'Katakana',
  'Bopomofo',
  'Hangul',
].map((name) => ({ name, pattern: new RegExp(`\\p{Script=${name}}`, 'u') }));
/** Characters that belong to every script (digits, punctuation) or to the letter before them (combining marks). */
const SHARED = /[\p{Script=Common}\p{Script=Inherited}]/u;
/**
 * Scripts that are written together (Unicode's "highly restrictive" profile, UTS #39): Japanese
 * mixes Han and kana, Chinese Han and Bopomofo, Korean Han and Hangul, each also with Latin.
 */
const WRITTEN_TOGETHER = [
  ['Latin', 'Han', 'Hiragana', 'Katakana'],
  ['Latin', 'Han', 'Bopomofo'],
  ['Latin', 'Han', 'Hangul'],
];

function scriptOf(character: string): string | null {
  if (SHARED.test(character)) return null;
  return SCRIPTS.find(({ pattern }) => pattern.test(character))?.name ?? 'another script';
}

/** The scripts of one part of an address when they are not written together; null when they are. */
function mixedScripts(part: string): string[] | null {
  const scripts = new Set<string>();
  for (const character of part) {
    const script = scriptOf(character);
    if (script !== null) scripts.add(script);
  }
  const together =
    scripts.size <= 1 || WRITTEN_TOGETHER.some((set) => [...scripts].every((script) => set.includes(script)));
  return together ? null : [...scripts];
}

const mixedMessage = (where: string, scripts: string[]) =>
  [
    `Enter an email address whose ${where} uses letters of one script`,
    `(it mixes ${scripts.join(' and ').replaceAll('_', ' ')} letters).`,
  ].join(' ');

/**
 * The domain's labels as a person reads them: an IDNA label (`xn--...`) decoded, since its
 * letters are what a browser or mail client shows; null when such a label does not decode.
 */
function domainLabels(domain: string): string[] | null {
  const labels = domain.split('.').map((label) => (label.startsWith('xn--') ? domainToUnicode(label) : label));
  return labels.some((label) => label === '') ? null : labels;
}

/**
 * The one rule about an email's characters (whatever else its schema checks): no invisible or
 * control characters, and neither the local part nor any domain label mixing scripts (`pаypal`
 * with a Cyrillic `а`). A plain ASCII address and one wholly in another script pass. Null when
 * nothing is wrong; otherwise the message for the email field.
 */
export function emailCharactersProblem(address: string): string | null {
  if (INVISIBLE.test(address)) return INVISIBLE_MESSAGE;
  const at = address.lastIndexOf('@');
  if (at === -1) return null;
  const local = mixedScripts(address.slice(0, at));
  if (local !== null) return mixedMessage('part before the @', local);
  const labels = domainLabels(address.slice(at + 1));
  if (labels === null) return INVALID_EMAIL;
  for (const label of labels) {
    const scripts = mixedScripts(label);
    if (scripts !== null) return mixedMessage('domain (each part between dots)', scripts);
  }
  return null;
}

/**
 * A console user's email, normalised (`normalizeEmail`): its characters, its shape and its length; null when it may be
 * used.
 */
export function emailProblem(address: string): string | null {
  return (
    emailCharactersProblem(address) ??
    (SHAPE.test(address) && address.length <= EMAIL_MAX_LENGTH ? null : INVALID_EMAIL)
  );
}

/** `emailCharactersProblem` as a valibot action, for the email fields of request schemas. */
export const emailCharacters = v.rawCheck<string>(({ dataset, addIssue }) => {
  if (!dataset.typed) return;
  const problem = emailCharactersProblem(dataset.value);
  if (problem !== null) addIssue({ message: problem });
});
