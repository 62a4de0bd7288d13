/**
 * The one form of an email address the service stores, looks up and counts sign-in attempts by:
 * trimmed, Unicode NFKC, lower-cased by JavaScript's rules. Comparing this form for equality (never
 * PostgreSQL's `lower()`, whose case rules differ: `İ` is `i` there and `i̇` here) means an address
 * that finds an account is the same text that counts against it.
 */
export function normalizeEmail(input: string): string {
  return input.trim().normalize('NFKC').toLowerCase();
}
