-- Sign-in lockout: an account or address whose limit of failures is reached is locked for the
-- whole window from that failure (src/services/sign-in-throttle.ts), not until the end of a window
-- that began at its first attempt.
alter table sign_in_attempts add column locked_until timestamptz;
