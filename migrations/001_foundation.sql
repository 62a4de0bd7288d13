-- Foundation: organizations, users, API keys, wallets, transactions, contacts, events.
-- Money is numeric(20,4); every timestamp is timestamptz and written in UTC.

create table organizations (
  id                bigserial primary key,
  name              text not null,
  api_version       smallint,
  verification_url  text,
  accept_by_default boolean not null default true,
  created           timestamptz not null default now(),
  modified          timestamptz not null default now()
);

create table users (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  name            text not null,
  permissions     text[] not null default '{}',
  created         timestamptz not null default now()
);
create index users_organization_idx on users (organization_id);

-- Keys are shown once; only a SHA-256 digest is kept. The public prefix finds the row,
-- the digest is then compared in constant time.
create table api_keys (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  user_id         bigint not null references users(id),
  prefix          text not null unique,
  digest          bytea not null,
  created         timestamptz not null default now(),
  revoked_at      timestamptz
);

-- Numeric ids are what version 1 of the API returns for a collection's currency.
create table currencies (
  id   smallint primary key,
  code text not null unique
);
insert into currencies (id, code) values (1, 'BXC'), (2, 'UGX'), (3, 'KES');

create table accounts (
  id                                     bigserial primary key,
  organization_id                        bigint not null references organizations(id),
  currency                               text not null references currencies(code),
  label                                  text not null,
  description                            text not null default '',
  status                                 text not null default 'active',
  balance                                numeric(20,4) not null default 0 check (balance >= 0),
  low_balance_threshold                  numeric(20,4),
  low_balance_notification_last_send_time timestamptz,
  author                                 bigint references users(id),
  updated_by                             bigint references users(id),
  created                                timestamptz not null default now(),
  modified                               timestamptz not null default now()
);
create index accounts_organization_currency_idx on accounts (organization_id, currency, created);

-- A balance changes only together with a transaction row, in one database transaction.
create table transactions (
  id          bigserial primary key,
  account_id  bigint not null references accounts(id),
  amount      numeric(20,4) not null,
  currency    text not null references currencies(code),
  type        text not null,
  description text not null default '',
  created     timestamptz not null default now()
);
create index transactions_account_idx on transactions (account_id, created);

create table contacts (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  first_name      text not null,
  last_name       text not null,
  email           text,
  phone_number    text not null,
  type            text not null default 'other',
  status          text not null default 'active',
  metadata        jsonb,
  author          bigint references users(id),
  updated_by      bigint references users(id),
  created         timestamptz not null default now(),
  modified        timestamptz not null default now()
);
-- One contact per number within an organization: a collection request for a known number
-- updates that contact instead of creating another.
create unique index contacts_organization_phone_idx on contacts (organization_id, phone_number);
create index contacts_organization_created_idx on contacts (organization_id, created desc, id desc);

-- The outbox: an event row is written in the same transaction as the change it reports,
-- then handed to its dispatch workflow; dispatched_at is set by that workflow.
create table events (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  type            text not null,
  data            json not null, -- json, not jsonb: keeps the key order of the object it reports
  author          bigint references users(id),
  updated_by      bigint references users(id),
  created         timestamptz not null default now(),
  modified        timestamptz not null default now(),
  dispatched_at   timestamptz
);
create index events_organization_idx on events (organization_id, id desc);
create index events_organization_type_idx on events (organization_id, type, id desc);
create index events_undispatched_idx on events (created) where dispatched_at is null;
