-- One fixed-window counter per key (src/services/throttling.ts): an organization's reads or writes
-- (`organization:<id>:read`), and the operator callback routes' counts per source address and per
-- operator, which belong to no organization. The counts are worth nothing past their window and the
-- table is unlogged already (a crash empties it), so the new table starts empty: the current windows
-- restart once, when this migration runs. API processes of the release before count by the old
-- columns: stop them before migrating.
drop table throttle_counters;
create unlogged table throttle_counters (
  key          text primary key,
  window_start timestamptz not null,
  count        integer not null
);
