/**
 * Sign-in attempts throttled per account and per client address, in PostgreSQL so every API
 * process shares the count. An attempt takes its slot before the password is checked, in one
 * `insert ... on conflict do update ... returning` per key (never a count followed by an add), so
 * concurrent guesses cannot pass the limit; a successful sign-in gives its slots back, so only
 * failures add up. The failure that reaches a limit locks its key for the whole window from then
 * (docs/operations.md, "Sign-in throttling"), whenever the window's first attempt was.
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

/**
 * Takes one attempt for the account and for the address; not allowed while either is locked, or
 * when concurrent attempts took its last slot first. A locked key takes no attempt: the lock runs
 * its time from the failure that set it, and a new window starts when it ends.
 */
export async function takeSignInAttempt(sql: Sql, keys: SignInKeys): Promise<SignInSlot> {
  let allowed = true;
  let retryAfterSeconds = 0;
  for (const { key, limit } of keysOf(keys)) {
    const [row] = await sql<{ attempts: number; retryAfter: number }[]>`
      insert into sign_in_attempts as a (key, window_start, attempts) values (${key}, now(), 1)
      on conflict (key) do update set
        attempts = case when a.locked_until > now() then a.attempts
                        when a.locked_until is not null or a.attempts = 0
                          or a.window_start <= now() - ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute' then 1
                        else a.attempts + 1 end,
        window_start = case when a.locked_until > now() then a.window_start
                            when a.locked_until is not null or a.attempts = 0
                              or a.window_start <= now() - ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute' then now()
                            else a.window_start end,
        locked_until = case when a.locked_until > now() then a.locked_until end
      returning case when locked_until is not null then ${limit + 1}::int else attempts end as attempts,
        ceil(extract(epoch from coalesce(locked_until, now() + ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute') - now()))::int as "retryAfter"`;
    if (row!.attempts > limit) {
      allowed = false;
      retryAfterSeconds = Math.max(retryAfterSeconds, row!.retryAfter);
    }
  }
  return { allowed, retryAfterSeconds };
}

/** A wrong password: a key whose failures reached its limit is locked for the whole window from now. */
export async function recordSignInFailure(sql: Sql, keys: SignInKeys): Promise<void> {
  for (const { key, limit } of keysOf(keys)) {
    await sql`
      update sign_in_attempts set locked_until = now() + ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute'
      where key = ${key} and attempts >= ${limit} and (locked_until is null or locked_until <= now())`;
  }
}

/** A correct password: the attempt was not a failure, so its slots are given back. */
export async function forgiveSignInAttempt(sql: Sql, keys: SignInKeys): Promise<void> {
  const names = keysOf(keys).map(({ key }) => key);
  await sql`update sign_in_attempts set attempts = greatest(attempts - 1, 0) where key in ${sql(names)}`;
}
