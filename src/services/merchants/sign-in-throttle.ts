/**
 * Sign-in attempts throttled in PostgreSQL, so every API process shares the count, under three keys:
 * an account from one address (the lock a guesser meets, which never reaches the owner at another
 * address), an address over all accounts, and an account over all addresses (a higher limit, which
 * still stops guesses spread across many addresses). An attempt takes its slot before the password is
 * checked, in one `insert ... on conflict do update ... returning` per key (never a count followed by
 * an add), so concurrent guesses cannot pass a limit; an attempt that is refused gives back what it
 * took, so knocking at a locked key counts against no other; a successful sign-in gives its slots
 * back, so only failures add up. The failure that reaches a limit locks its key for the whole window
 * from then (docs/operations.md, "Sign-in throttling"), whenever the window's first attempt was.
 */
import type { Sql } from '../../db';
import { normalizeEmail } from '../../domain/emails';

const SIGN_IN_WINDOW_MINUTES = 15;
/** Failed attempts one account may take from one address per window. */
export const SIGN_IN_ACCOUNT_ADDRESS_LIMIT = 5;
/** Failed attempts one address may take per window, over all accounts (an office shares one address). */
export const SIGN_IN_ADDRESS_LIMIT = 20;
/**
 * Failed attempts one account may take per window over all addresses together: five addresses'
 * worth, so locking the owner out takes that many addresses, and guessing from many addresses at
 * once still stops there.
 */
export const SIGN_IN_ACCOUNT_LIMIT = 25;

type SignInKeys = { email: string; address: string };
type SignInSlot = { allowed: boolean; retryAfterSeconds: number };
type ThrottleKey = { key: string; limit: number };

/**
 * The keys of an attempt, the narrowest first: the one a lone guesser reaches refuses before the
 * wider ones count. `address` is as a throttle counts it (`throttledAddress`: an IPv6 client by its /64).
 */
function keysOf({ email, address: source }: SignInKeys): ThrottleKey[] {
  const account = normalizeEmail(email);
  return [
    { key: `account-address:${account} ${source}`, limit: SIGN_IN_ACCOUNT_ADDRESS_LIMIT },
    { key: `address:${source}`, limit: SIGN_IN_ADDRESS_LIMIT },
    { key: `account:${account}`, limit: SIGN_IN_ACCOUNT_LIMIT },
  ];
}

/** The longest wait among the locked keys, in seconds; 0 when none is locked. */
async function lockedFor(sql: Sql, keys: ThrottleKey[]): Promise<number> {
  const [row] = await sql<{ retryAfter: number | null }[]>`
    select max(ceil(extract(epoch from locked_until - now())))::int as "retryAfter"
    from sign_in_attempts where key in ${sql(keys.map(({ key }) => key))} and locked_until > now()`;
  return row?.retryAfter ?? 0;
}

/**
 * Takes one slot of a key: a new window when the last one ended (or a lock ran out), else one more
 * attempt; a locked key takes none. Whether the attempt fits the limit, and when to come back if not.
 */
async function takeSlot(
  sql: Sql,
  { key, limit }: ThrottleKey,
): Promise<{ taken: boolean; allowed: boolean; retryAfter: number }> {
  const [row] = await sql<{ attempts: number; locked: boolean; retryAfter: number }[]>`
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
    returning attempts, locked_until is not null as locked,
      ceil(extract(
        epoch from coalesce(locked_until, now() + ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute') - now()
      ))::int as "retryAfter"`;
  return { taken: !row!.locked, allowed: !row!.locked && row!.attempts <= limit, retryAfter: row!.retryAfter };
}

/** Gives back one slot of each key (an attempt that was refused, or a sign-in that succeeded). */
async function giveBack(sql: Sql, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await sql`update sign_in_attempts set attempts = greatest(attempts - 1, 0) where key in ${sql(keys)}`;
}

/**
 * Takes one attempt for the account from this address, for the address and for the account; not
 * allowed while any is locked, or when concurrent attempts took a key's last slot first. A refused
 * attempt keeps no slot: a guesser locked out at its own address adds nothing to the account's
 * count over all addresses, and so cannot lock the owner out by knocking.
 */
export async function takeSignInAttempt(sql: Sql, signIn: SignInKeys): Promise<SignInSlot> {
  const keys = keysOf(signIn);
  const locked = await lockedFor(sql, keys);
  if (locked > 0) return { allowed: false, retryAfterSeconds: locked };
  const taken: string[] = [];
  for (const throttleKey of keys) {
    const slot = await takeSlot(sql, throttleKey);
    if (slot.taken) taken.push(throttleKey.key);
    if (!slot.allowed) {
      await giveBack(sql, taken);
      return { allowed: false, retryAfterSeconds: slot.retryAfter };
    }
  }
  return { allowed: true, retryAfterSeconds: 0 };
}

/** A wrong password: a key whose failures reached its limit is locked for the whole window from now. */
export async function recordSignInFailure(sql: Sql, signIn: SignInKeys): Promise<void> {
  for (const { key, limit } of keysOf(signIn)) {
    await sql`
      update sign_in_attempts set locked_until = now() + ${SIGN_IN_WINDOW_MINUTES}::int * interval '1 minute'
      where key = ${key} and attempts >= ${limit} and (locked_until is null or locked_until <= now())`;
  }
}

/** A correct password: the attempt was not a failure, so its slots are given back. */
export async function forgiveSignInAttempt(sql: Sql, signIn: SignInKeys): Promise<void> {
  await giveBack(
    sql,
    keysOf(signIn).map(({ key }) => key),
  );
}
