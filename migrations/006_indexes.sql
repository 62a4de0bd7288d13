-- Indexes found by `npm run bench` (bench/results/latest.md) for GET /api/collections filters over
-- a million collections: a status (and currency) filter and a phone-number filter otherwise scan
-- every collection of the organization for the count and walk the created-order index for the page.
create index collections_org_status_idx on collections (organization_id, status, currency, created desc, id desc);
create index collections_org_phone_idx on collections (organization_id, phone_number, created desc, id desc);
