-- Webhook dispatch by a fixed pool (docs/architecture.md, Webhook delivery): dispatchers claim due
-- delivery rows across every webhook, each webhook within its own concurrency. The deliveries a
-- webhook has in flight are its leased pending rows: counted at every claim, so kept in an index.
-- Several deployments of the service may share one database, each with its own task queue (the
-- test suites run so): with WEBHOOK_DISPATCH_SCOPE=task-queue a pool sends only the webhooks made
-- through its own deployment: the task queue its request's transaction names (src/db/tenancy.ts),
-- or its process's connection (createSql in src/db/index.ts).
alter table webhooks add column dispatch_queue text default nullif(current_setting('collections.task_queue', true), '');
-- The trace an event was recorded in (W3C traceparent): its deliveries' POSTs join it, though a
-- dispatcher that nothing in that trace started sends them.
alter table events add column traceparent text;
create index webhook_deliveries_leased_idx on webhook_deliveries (webhook_id, leased_until) where status = 'pending' and leased_until is not null;
