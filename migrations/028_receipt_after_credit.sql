-- A push the operator says was paid while its receipt is unknown is credited under the push (its
-- operator reference) and takes the first confirmed receipt of its number and amount later
-- (docs/architecture.md#one-receipt-one-credit): these prompts, found by number and amount.
create index network_operations_paid_awaiting_receipt_idx on network_operations (network, phone_number, amount, created)
  where kind = 'prompt' and remote_transaction_id is null and (result->>'status') = 'paid';
