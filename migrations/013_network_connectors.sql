-- What the service asked a real operator (a prompt, a payout, a reversal, a status query), under our
-- reference and the operator's, with the workflow that waits for it: an operator's callback finds its
-- operation here and wakes that workflow (a callback is a hint, never proof); a status query's answer,
-- which Daraja sends asynchronously, is kept here for the workflow to read.
create table network_operations (
  id                    bigserial primary key,
  network               text not null,
  kind                  text not null check (kind in ('prompt', 'payout', 'reversal', 'status_query')),
  -- Ours, unique per network: a prompt's reference, a payout's OriginatorConversationID or X-Reference-Id, a query's.
  reference             text not null,
  -- The operator's, once it answered: CheckoutRequestID, ConversationID, X-Reference-Id.
  operator_reference    text,
  workflow_id           text not null,
  -- What it is about: the prompt, payout or reported payment a status query asks about.
  subject               text not null,
  phone_number          text,
  amount                numeric(20,4),
  -- The operator's id of the money movement once learnt (a receipt); the first one recorded stays.
  remote_transaction_id text,
  -- The last callback the operator sent about it (never believed alone), and a status query's answer.
  hint                  jsonb,
  result                jsonb,
  created               timestamptz not null default now(),
  modified              timestamptz not null default now(),
  unique (network, reference)
);
create unique index network_operations_operator_reference_idx on network_operations (network, operator_reference) where operator_reference is not null;
create index network_operations_subject_idx on network_operations (network, subject, created desc);
