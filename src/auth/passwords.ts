/**
 * Console passwords: argon2id through Bun.password (Bun's built-in binding, with a salt and
 * parameters encoded in the hash). The API process and the admin CLI run on Bun; where Bun is
 * absent (the API on Deno) console sign-in is unavailable and says so, rather than falling back to
 * a weaker hash.
 */
type BunPassword = {
  hash(password: string, options: { algorithm: 'argon2id' }): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
};

function bunPassword(): BunPassword {
  const password = (globalThis as { Bun?: { password?: BunPassword } }).Bun?.password;
  if (!password) throw new Error('console passwords need the Bun runtime (argon2id through Bun.password)');
  return password;
}

export const hashPassword = (password: string): Promise<string> =>
  bunPassword().hash(password, { algorithm: 'argon2id' });

let dummyHash: Promise<string> | undefined;

/**
 * Checks a password against a stored hash; with no hash (no such user) it still verifies against a
 * dummy one, so an unknown email takes as long as a wrong password.
 */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  dummyHash ??= hashPassword('no user has this password');
  const valid = await bunPassword().verify(password, hash ?? (await dummyHash));
  return hash !== undefined && valid;
}
