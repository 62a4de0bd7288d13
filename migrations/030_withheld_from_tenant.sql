-- The tenant boundary (migration 023, docs/architecture.md, Tenant boundary) covers every table that
-- holds an organization's data or a subscriber's number. These hold such data without an
-- organization_id to guard their rows by, and no statement of a merchant's request runs on them
-- once its organization is named: the worker and its activities (the sandbox network's state, the
-- operation journal), the sweeps and the admin commands (sweep failures), the console's sign-in
-- before a session exists (sign-in attempts, keyed by email address) and a request's admission
-- before its organization is named (request counters) all run as the connecting role. The tenant
-- role keeps no privilege on them (migration 023 granted it every table). A merchant's settlement
-- report learns the route of its own movements from the operation journal outside the boundary,
-- for exactly those movements (src/services/settlements.ts).
revoke all on
  sandbox_messages,
  sandbox_payments,
  sandbox_payouts,
  sandbox_rejections,
  network_operations,
  sign_in_attempts,
  sweep_failures,
  request_counters
from collections_tenant;
