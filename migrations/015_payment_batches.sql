-- Bulk payouts: a batch of payments uploaded at once (JSON or CSV) and sent by one workflow,
-- `payment-batch-<id>`, with a bounded number of payments in flight.
--
-- The reservation rule is row by row: a row's amount is taken out of its wallet when the batch
-- creates the row's payment (in the same transaction, with the same guard as a single payment:
-- never a negative balance). At upload the batch is refused when a wallet does not hold the sum of
-- its rows; a row whose wallet no longer holds its amount when its turn comes ends `failed`
-- ("insufficient funds") and the batch goes on.
create table payment_batches (
  id                   bigserial primary key,
  organization_id      bigint not null references organizations(id),
  state                text not null default 'processing' check (state in ('processing', 'completed')),
  row_count            integer not null check (row_count > 0),
  author               bigint references users(id),
  workflow_started_at  timestamptz,
  completed_at         timestamptz,
  created              timestamptz not null default now(),
  modified             timestamptz not null default now(),
  check ((state = 'completed') = (completed_at is not null))
);
create index payment_batches_organization_idx on payment_batches (organization_id, created desc, id desc);
create index payment_batches_unstarted_idx on payment_batches (created) where workflow_started_at is null;

-- One row per line of the upload, in order. `payment_id` is set once, in the transaction that
-- creates the payment and reserves its amount (the unique key: a row is never paid twice);
-- `state` is 'pending' until then, 'created' after, or 'failed' when its wallet could not pay it.
create table payment_batch_rows (
  id            bigserial primary key,
  batch_id      bigint not null references payment_batches(id),
  row_number    integer not null check (row_number > 0),
  account_id    bigint not null references accounts(id),
  network       text not null,
  phone_number  text not null,
  amount        numeric(20,4) not null check (amount > 0),
  currency      text not null references currencies(code),
  input         jsonb not null,
  state         text not null default 'pending' check (state in ('pending', 'created', 'failed')),
  error         text,
  payment_id    bigint unique references payments(id),
  unique (batch_id, row_number),
  check ((state = 'created') = (payment_id is not null))
);
create index payment_batch_rows_pending_idx on payment_batch_rows (batch_id, row_number) where state = 'pending';
