-- Money out and money visible: payments to subscribers, reversals of collections, and the
-- transactions behind every wallet balance. A wallet's balance changes only with a transaction
-- row in the same database transaction; debits are negative, so a balance is always the sum of
-- its transactions, and the balance's check (>= 0) makes overdrawing impossible whatever the
-- concurrency.

-- Currencies as the API lists them (GET /api/currencies).
alter table currencies
  add column name text not null default '',
  add column minor_units smallint not null default 2;
update currencies set name = 'Sandbox currency', minor_units = 2 where code = 'BXC';
update currencies set name = 'Ugandan shilling', minor_units = 0 where code = 'UGX';
update currencies set name = 'Kenyan shilling', minor_units = 2 where code = 'KES';

-- A payment (money out) to a subscriber. Its amount is debited from the wallet in the transaction
-- that creates it (the reservation); a payment that fails or is cancelled gets it back through a
-- reversing transaction. Each one runs as the workflow `payment-<id>`.
create table payments (
  id                     bigserial primary key,
  organization_id        bigint not null references organizations(id),
  account_id             bigint not null references accounts(id),
  contact_id             bigint references contacts(id),
  amount                 numeric(20,4) not null check (amount > 0),
  currency               text not null references currencies(code),
  phone_number           text not null,
  network                text not null,
  payment_type           text not null default 'money',
  description            text not null default '',
  metadata               jsonb,
  callback_url           text,
  send_sms_message       boolean not null default false,
  state                  text not null default 'new'
                           check (state in ('new', 'scheduled', 'processing', 'completed', 'rejected', 'processed_with_errors', 'cancelled')),
  last_error             text,
  remote_transaction_id  text,
  rejected_reason        text,
  rejected_by            text,
  rejected_time          timestamptz,
  cancelled_reason       text,
  cancelled_by           bigint references users(id),
  cancelled_time         timestamptz,
  start_date             timestamptz,
  workflow_started_at    timestamptz,
  author                 bigint references users(id),
  updated_by             bigint references users(id),
  created                timestamptz not null default now(),
  modified               timestamptz not null default now()
);
create index payments_organization_idx on payments (organization_id, created desc, id desc);
create index payments_organization_state_idx on payments (organization_id, state, created desc, id desc);
create index payments_organization_phone_idx on payments (organization_id, phone_number, created desc, id desc);
create index payments_unstarted_idx on payments (created) where workflow_started_at is null;

-- A reversal sends a successful collection's amount back to the subscriber, out of the wallet it
-- credited: at most one per collection (the unique key), debited when it is created.
create table reversals (
  id                     bigserial primary key,
  organization_id        bigint not null references organizations(id),
  collection_id          bigint not null unique references collections(id),
  account_id             bigint not null references accounts(id),
  amount                 numeric(20,4) not null check (amount > 0),
  currency               text not null references currencies(code),
  phone_number           text not null,
  network                text not null,
  reason                 text,
  state                  text not null default 'processing' check (state in ('processing', 'completed', 'failed')),
  last_error             text,
  remote_transaction_id  text,
  workflow_started_at    timestamptz,
  author                 bigint references users(id),
  created                timestamptz not null default now(),
  modified               timestamptz not null default now()
);
create index reversals_organization_idx on reversals (organization_id, created desc, id desc);
create index reversals_unstarted_idx on reversals (created) where workflow_started_at is null;

-- What each transaction belongs to. One debit and at most one release per payment, one debit and
-- at most one release per reversal: retries never move money twice.
alter table transactions
  add column payment_id bigint references payments(id),
  add column reversal_id bigint references reversals(id);
-- One credit per collection still; its reversal's transactions point at the collection too.
drop index transactions_collection_idx;
create unique index transactions_collection_credit_idx on transactions (collection_id) where collection_id is not null and type = 'mobile_collection';
create unique index transactions_payment_type_idx on transactions (payment_id, type) where payment_id is not null;
create unique index transactions_reversal_type_idx on transactions (reversal_id, type) where reversal_id is not null;
create index transactions_account_created_idx on transactions (account_id, created desc, id desc);

-- A payment's `callback_url` receives its `payment.status.changed` events like a webhook of that
-- payment only: a webhook row bound to the payment, never listed with the organization's webhooks.
alter table webhooks add column payment_id bigint references payments(id);

-- What the sandbox network was asked to send (payments and reversals), once per reference.
create table sandbox_payouts (
  reference              text primary key,
  phone_number           text not null,
  amount                 numeric(20,4) not null,
  currency               text not null,
  outcome                text not null,
  remote_transaction_id  text not null,
  created                timestamptz not null default now()
);
