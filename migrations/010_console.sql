-- The merchant web console (/console): users who sign in with an email and a password, their
-- sessions, and the sign-in throttle. (008 and 009 are reserved for other changes.)

-- A user signs in with an email (unique whatever its case) and a password, stored only as an
-- argon2id hash. A removed user is kept (API keys, webhooks and rows name their author) but can no
-- longer sign in, and its address can be given to a new user.
alter table users
  add column email         text,
  add column password_hash text,
  add column removed_at    timestamptz;
create unique index users_email_idx on users (lower(email)) where email is not null and removed_at is null;

-- A signed-in browser. The cookie holds a random token; only its SHA-256 digest is stored, so a
-- copy of this table signs nobody in. csrf_token is the synchronizer token every console form
-- carries and every POST must send back. Sign-out deletes the row; expired rows are deleted when
-- their user signs in again.
create table console_sessions (
  id           bigserial primary key,
  token_digest bytea not null unique,
  user_id      bigint not null references users(id),
  csrf_token   text not null,
  created      timestamptz not null default now(),
  expires_at   timestamptz not null
);
create index console_sessions_user_idx on console_sessions (user_id);

-- Sign-in attempts per account (`account:<email in lower case>`) and per client address
-- (`address:<ip>`), one fixed-window row each. An attempt takes its slot with one
-- `insert ... on conflict do update ... returning` before the password is checked, so concurrent
-- guesses never get past the limit; a successful sign-in gives its slot back.
create table sign_in_attempts (
  key          text primary key,
  window_start timestamptz not null,
  attempts     integer not null
);

-- A request's status timeline on its console page: its status-change events, found by the request
-- id the event data carries.
create index events_request_status_idx on events (organization_id, (data->>'id'), id)
  where type = 'collectionrequest.status.changed';
