-- Collection requests, their subscriptions, and what the sandbox network would pay.

create table collection_requests (
  id                      bigserial primary key,
  organization_id         bigint not null references organizations(id),
  account_id              bigint references accounts(id),
  contact_id              bigint not null references contacts(id),
  amount                  numeric(20,4) not null check (amount > 0),
  currency                text not null references currencies(code),
  phone_number            text not null,
  network                 text not null,
  reason                  text,
  metadata                jsonb,
  success_message         text,
  send_instructions       boolean not null default false,
  instructions            text,
  status                  text not null default 'new',
  error_message           text,
  expiry_date             timestamptz not null,
  start_date              timestamptz,
  -- Seconds, so tests can run the real workflow with short waits; the API takes minutes (>= 10).
  retry_interval_seconds  integer,
  max_attempts            integer not null default 3,
  attempts                integer not null default 0,
  subscription_settings   json, -- json keeps the key order the merchant sees
  -- A request created by a subscription points at the request that holds the subscription.
  subscription_id         bigint references collection_requests(id),
  occurrence_at           timestamptz,
  collection_id           bigint,
  remote_transaction_id   text,
  author                  bigint references users(id),
  updated_by              bigint references users(id),
  created                 timestamptz not null default now(),
  modified                timestamptz not null default now()
);
create index collection_requests_organization_idx on collection_requests (organization_id, created desc, id desc);
create index collection_requests_open_match_idx on collection_requests (phone_number, currency, amount)
  where status in ('new', 'pending', 'instructions_sent', 'processing_started');
-- Each occurrence of a subscription is created once, however often its creation is retried.
create unique index collection_requests_occurrence_idx on collection_requests (subscription_id, occurrence_at)
  where subscription_id is not null;

-- The sandbox network's payments, recorded when it "sends" them after its delay.
create table sandbox_payments (
  id                     bigserial primary key,
  remote_transaction_id  text not null unique,
  phone_number           text not null,
  amount                 numeric(20,4) not null,
  currency               text not null,
  reference              text not null,
  network                text not null,
  created                timestamptz not null default now()
);

-- Set once the request's workflow has been started; the outbox sweep starts the others.
alter table collection_requests add column workflow_started_at timestamptz;
create index collection_requests_unstarted_idx on collection_requests (created) where workflow_started_at is null;

-- Text messages the sandbox network "sent" (instructions, success), one per request, kind and attempt.
create table sandbox_messages (
  id            bigserial primary key,
  request_id    bigint not null references collection_requests(id),
  kind          text not null,
  attempt       integer not null default 0,
  phone_number  text not null,
  text          text not null,
  created       timestamptz not null default now(),
  unique (request_id, kind, attempt)
);
