import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Keys look like the 40-hex-character tokens the provider's clients send; the first 12 find the row. */
export const API_KEY_PATTERN = /^[0-9a-f]{40}$/;
const PREFIX_LENGTH = 12;

type IssuedKey = { key: string; prefix: string; digest: Buffer };

export function digestKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

export function issueApiKey(): IssuedKey {
  const key = randomBytes(20).toString('hex');
  return { key, prefix: key.slice(0, PREFIX_LENGTH), digest: digestKey(key) };
}

export function keyPrefix(key: string): string {
  return key.slice(0, PREFIX_LENGTH);
}

/**
 * Whether an `Authorization` header carries `Bearer <expected>` (compared in constant time); with
 * no expected token configured, every request passes.
 */
export function bearerAllowed(authorization: string | null | undefined, expected: string | undefined): boolean {
  if (expected === undefined) return true;
  const presented = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  return presented !== undefined && keyMatches(presented, digestKey(expected));
}

/** Constant-time comparison of a presented key with a stored digest. */
export function keyMatches(key: string, storedDigest: Uint8Array): boolean {
  const presented = digestKey(key);
  return presented.length === storedDigest.length && timingSafeEqual(presented, storedDigest);
}
