-- Incoming collections, their credits, and network callback credentials.

create table collections (
  id                     bigserial primary key,
  -- Null while unassigned: an unmatched collection waits to be claimed (api.md 4.1).
  organization_id        bigint references organizations(id),
  network                text not null,
  remote_transaction_id  text not null,
  amount                 numeric(20,4) not null check (amount > 0),
  currency               text not null references currencies(code),
  phone_number           text not null,
  payment_date           timestamptz not null,
  reference              text not null default '',
  status                 text not null default 'pending',
  rejection_reason       text,
  collection_request_id  bigint references collection_requests(id),
  contact_id             bigint references contacts(id),
  author                 bigint references users(id),
  updated_by             bigint references users(id),
  created                timestamptz not null default now(),
  modified               timestamptz not null default now(),
  unique (network, remote_transaction_id)
);
create index collections_organization_idx on collections (organization_id, created desc, id desc);
create index collections_unassigned_idx on collections (phone_number, amount, remote_transaction_id) where organization_id is null;

-- A request holds at most one collection; a collection pays at most one request.
alter table collection_requests add constraint collection_requests_collection_fk foreign key (collection_id) references collections(id);
create unique index collection_requests_collection_idx on collection_requests (collection_id) where collection_id is not null;

-- One credit per collection, whatever retries or racing claims do.
alter table transactions add column collection_id bigint references collections(id);
create unique index transactions_collection_idx on transactions (collection_id) where collection_id is not null;

-- A network authenticates its callbacks with a secret; only the digest is kept.
create table network_credentials (
  network     text primary key,
  digest      bytea not null,
  created     timestamptz not null default now()
);

-- Contact instant verification (api.md 2.4, 4.4): what the network said, when it was asked.
alter table contacts
  add column phone_is_supported text,
  add column phone_is_mm_registered text,
  add column name_on_network text,
  add column name_matches_network_status text,
  add column name_matches_network_score integer,
  add column network_name text,
  add column national_id text,
  add column national_id_type text;

-- Rejections the sandbox network was told about (a real network gets them through its adapter).
create table sandbox_rejections (
  remote_transaction_id  text primary key,
  reason                 text,
  created                timestamptz not null default now()
);
