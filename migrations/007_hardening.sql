-- Hardening from an adversarial probe: tenant-safe matching, sweeps that set bad rows aside.

-- What a network said a payment answered: the reference of the prompt it was paid through
-- (DESIGN.md: a payment that answers a prompt goes to that request only).
alter table collections add column prompt_reference text;

-- Rows a sweep could not process, set aside with their error so the sweep goes on with the rest
-- (DESIGN.md: one bad row never stops a sweep). `kind` names the sweep and its table; an operator
-- reads them with `npm run admin -- sweeps failures` and puts one back with `sweeps retry`.
create table sweep_failures (
  kind             text not null,
  row_id           bigint not null,
  error            text not null,
  attempts         integer not null default 1,
  first_failed_at  timestamptz not null default now(),
  last_failed_at   timestamptz not null default now(),
  primary key (kind, row_id)
);
