/**
 * Sign-in attempts throttled per account and per client address, in PostgreSQL so every API
 * process shares the count. An attempt takes its slot before the password is checked, in one
 * `insert ... on conflict do update ... returning` per key (never a count followed by an add), so
 * concurrent guesses cannot pass the limit; a successful sign-in gives its slots back, so only
 * failures add up.
 */
import type { Sql } from '../db';
import { normalizeEmail } from '../domain/emails';

const SIGN_IN_WINDOW_MINUTES = 15;
/** Failed attempts one account may take per window. */
export const SIGN_IN_ACCOUNT_LIMIT = 5;
/** Failed attempts one address may take per window, over all accounts (an office shares one address). */
export const SIGN_IN_ADDRESS_LIMIT = 20;

type SignInKeys = { email: string; address: string };
type SignInSlot = { allowed: boolean; retryAfterSeconds: number };

const keysOf = ({ email, address }: SignInKeys) => [
  { key: `account:${normalizeEmail(email)}`, limit: SIGN_IN_ACCOUNT_LIMIT },
  { key: `address:${address}`, limit: SIGN_IN_ADDRESS_LIMIT },
];

/** Takes one attempt for the account and for the address; not allowed once either is past its limit. */
export async function takeSignInAttempt(sql: Sql, keys: SignInKeys): Promise<SignInSlot> {
  let allowed = true;
  let retryAfterSeconds = 0;
  for (const { key, limit } of keysOf(keys)) {
    const [row] = await sql<{ attempts: number; retryAfter: number }[]>`
      insert into sign_in_attempts (key, window_start, attempts) values (${key}, now(), 1)
      on conflict (key) do update set
        attempts = case when sign_in_attempts.window_start <= now() - ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute'
                        then 1 else sign_in_attempts.attempts + 1 end,
        window_start = case when sign_in_attempts.window_start <= now() - ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute'
                            then now() else sign_in_attempts.window_start end
      returning attempts,
        ceil(extract(epoch from window_start + ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute' - now()))::int as "retryAfter"`;
    if (row!.attempts > limit) {
      allowed = false;
      retryAfterSeconds = Math.max(retryAfterSeconds, row!.retryAfter);
    }
  }
  return { allowed, retryAfterSeconds };
}

/** A correct password: the attempt was not a failure, so its slots are given back. */
export async function forgiveSignInAttempt(sql: Sql, keys: SignInKeys): Promise<void> {
  const names = keysOf(keys).map(({ key }) => key);
  await sql`update sign_in_attempts set attempts = greatest(attempts - 1, 0) where key in ${sql(names)}`;
}
