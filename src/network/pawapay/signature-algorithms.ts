/**
 * The signature algorithms (RFC 9421 §3.3) and digests (RFC 9530) of pawaPay's signed callbacks (./signatures.ts):
 * which algorithm a key verifies, whether a signature verifies, and whether `Content-Digest` vouches for a body.
 */
import { constants, createHash, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { parseDictionary } from './structured-fields';

export type SignatureAlgorithm = 'ecdsa-p256-sha256' | 'ecdsa-p384-sha384' | 'rsa-pss-sha512' | 'rsa-v1_5-sha256';

/** The RFC 9421 §3.3 algorithms pawaPay lists (`Accept-Signature`), with the key each needs. */
export const ALGORITHMS: Readonly<
  Record<SignatureAlgorithm, { hash: string; keyTypes: readonly string[]; curve?: string; half?: number }>
> = {
  'ecdsa-p256-sha256': { hash: 'sha256', keyTypes: ['ec'], curve: 'prime256v1', half: 32 },
  'ecdsa-p384-sha384': { hash: 'sha384', keyTypes: ['ec'], curve: 'secp384r1', half: 48 },
  'rsa-pss-sha512': { hash: 'sha512', keyTypes: ['rsa', 'rsa-pss'] },
  'rsa-v1_5-sha256': { hash: 'sha256', keyTypes: ['rsa'] },
};
const isAlgorithm = (name: string): name is SignatureAlgorithm => Object.hasOwn(ALGORITHMS, name);

/** The algorithm a key can verify: the one named (when the key fits it), else the one an EC key's curve implies. */
export function algorithmFor(named: string | undefined, key: KeyObject): SignatureAlgorithm | { problem: string } {
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (named === undefined) {
    const implied = (Object.keys(ALGORITHMS) as SignatureAlgorithm[]).find(
      (name) => ALGORITHMS[name].curve !== undefined && ALGORITHMS[name].curve === curve,
    );
    return implied ?? { problem: 'the signature names no algorithm and the key does not imply one' };
  }
  if (!isAlgorithm(named)) return { problem: `unsupported signature algorithm ${named}` };
  const wanted = ALGORITHMS[named];
  const fits =
    wanted.keyTypes.includes(key.asymmetricKeyType ?? '') && (wanted.curve === undefined || wanted.curve === curve);
  return fits ? named : { problem: `the key named does not fit the algorithm ${named}` };
}

/** RSA-PSS as RFC 9421 §3.3.1 fixes it: SHA-512, MGF1 with SHA-512, a 64-byte salt. */
export const PSS = { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 } as const;

export function signatureVerifies(
  algorithm: SignatureAlgorithm,
  key: KeyObject,
  base: Buffer,
  signature: Uint8Array,
): boolean {
  const { hash, half } = ALGORITHMS[algorithm];
  const attempt = (options: {
    key: KeyObject;
    padding?: number;
    saltLength?: number;
    dsaEncoding?: 'der' | 'ieee-p1363';
  }) => {
    try {
      return verify(hash, base, options, signature);
    } catch {
      return false;
    }
  };
  if (algorithm === 'rsa-pss-sha512') return attempt({ key, ...PSS });
  if (algorithm === 'rsa-v1_5-sha256') return attempt({ key, padding: constants.RSA_PKCS1_PADDING });
  // ECDSA: raw r||s (RFC 9421) when it has that length, else DER (what pawaPay sends).
  return (
    (signature.length === 2 * half! && attempt({ key, dsaEncoding: 'ieee-p1363' })) ||
    attempt({ key, dsaEncoding: 'der' })
  );
}

/** RFC 9530 digest algorithms pawaPay uses for `Content-Digest`. */
export const DIGESTS: Readonly<Record<string, string>> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

/**
 * Why `Content-Digest` does not vouch for `body`, or null: every sha-256/sha-512 member must match, and one must be
 * there.
 */
export function digestProblem(header: string, body: Uint8Array): string | null {
  let checked = 0;
  for (const [name, member] of parseDictionary(header)) {
    const hash = DIGESTS[name];
    if (hash === undefined) continue;
    if (member.kind !== 'item' || member.item.type !== 'bytes')
      return `the Content-Digest ${name} is not a byte sequence`;
    const actual = createHash(hash).update(body).digest();
    const claimed = Buffer.from(member.item.value);
    if (claimed.length !== actual.length || !timingSafeEqual(claimed, actual))
      return 'the Content-Digest does not match the body';
    checked += 1;
  }
  return checked === 0 ? 'the Content-Digest has no sha-256 or sha-512 digest' : null;
}
