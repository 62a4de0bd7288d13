-- One fixed-window counter per key (src/services/throttling.ts): an organization's reads or writes
-- (`organization:<id>:read`), and the operator callback routes' counts per source address and per
-- operator, which belong to no organization. A new table beside throttle_counters rather than a
-- change of it: API processes of the release before keep counting in the old one until they are
-- replaced (a rolling deploy), and a later migration drops it. The counts are worth nothing past
-- their window, so the new table starts empty and is unlogged (a crash empties it).
create unlogged table request_counters (
  key          text primary key,
  window_start timestamptz not null,
  count        integer not null
);
