-- An operator's receipt is credited once in the whole service (docs/architecture.md#one-receipt-one-credit).
-- A collection already holds its (network, remote_transaction_id) once; a prompt of ours settles at
-- most one receipt, and no receipt settles two prompts, whatever a callback claims.
create unique index network_operations_prompt_receipt_idx on network_operations (network, remote_transaction_id)
  where kind = 'prompt' and remote_transaction_id is not null;
-- The prompts still being settled, which hold back a reported payment of the same number and amount.
create index network_operations_unsettled_prompt_idx on network_operations (network, phone_number, amount, created)
  where kind = 'prompt' and remote_transaction_id is null and result is null;
