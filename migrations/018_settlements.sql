-- Daily settlement reports (src/services/settlements.ts) read one UTC day of the movements that
-- became final then: collections by their credit's time, payments and reversals by the time they
-- were recorded completed (a completed row never changes again). These partial indexes find a
-- day's rows without reading every row ever written.
create index transactions_collection_credit_created_idx on transactions (created) where type = 'mobile_collection';
create index payments_completed_idx on payments (modified) where state = 'completed';
create index reversals_completed_idx on reversals (modified) where state = 'completed';
