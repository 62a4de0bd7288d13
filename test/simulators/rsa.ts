/** RSA as the operators' simulators need it: a key pair made at start, and PKCS#1 v1.5 decryption of what a client encrypted under its public key. */
import { constants, generateKeyPairSync, privateDecrypt } from 'node:crypto';

/** A fresh 2048-bit key pair: the public key as the portals show it (base64 DER, SubjectPublicKeyInfo), the private key in PEM. */
export function simulatorKeyPair(): { publicKey: string; privateKey: string } {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    publicKey: keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    privateKey: keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
  };
}

/** The plain text of an RSA PKCS#1 v1.5 cipher text in base64, or null (padding removed by hand: Bun refuses PKCS#1 private decryption). */
export function decryptPkcs1(privateKey: string, encrypted: string): string | null {
  try {
    const block = privateDecrypt(
      { key: privateKey, padding: constants.RSA_NO_PADDING },
      Buffer.from(encrypted, 'base64'),
    );
    const end = block.indexOf(0, 2);
    return block[0] === 0 && block[1] === 2 && end >= 10 ? block.subarray(end + 1).toString() : null;
  } catch {
    return null;
  }
}
