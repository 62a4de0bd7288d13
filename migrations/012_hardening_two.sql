-- Emails are stored in the one normalised form the service compares (src/domain/emails.ts), and are
-- unique as stored: lookups compare that form for equality instead of PostgreSQL's lower(), whose case
-- rules differ from the ones the sign-in throttle counted by.
update users set email = lower(email) where email is not null and email <> lower(email);
drop index users_email_idx;
create unique index users_email_idx on users (email) where email is not null and removed_at is null;
