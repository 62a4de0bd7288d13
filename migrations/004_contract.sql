-- Contract completeness: throttling, duplicate-check keys and the bill-payment catalogue.

-- Per-organization throttle limits (requests per window); null means the configured default.
alter table organizations
  add column throttle_reads  integer check (throttle_reads > 0),
  add column throttle_writes integer check (throttle_writes > 0);

-- One fixed-window counter per organization and kind of request. A request moves its row to the
-- current window (count 1) or adds one to it, in a single `insert ... on conflict do update`, so
-- every API instance shares the count and no two can both take the last slot.
create table throttle_counters (
  organization_id bigint not null references organizations(id),
  kind            text not null check (kind in ('read', 'write')),
  window_start    timestamptz not null,
  count           integer not null,
  primary key (organization_id, kind)
);

-- A `Duplicate-Check-Key` claimed by a write. The unique key per organization is what makes two
-- simultaneous requests with one key produce one object; an expired key is claimed anew in place.
create table duplicate_check_keys (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  key             text not null,
  method          text not null,
  path            text not null,
  object_type     text,
  object_id       bigint,
  created         timestamptz not null default now(),
  expires_at      timestamptz not null
);
create unique index duplicate_check_keys_organization_key_idx on duplicate_check_keys (organization_id, key);
create index duplicate_check_keys_expires_idx on duplicate_check_keys (expires_at);

-- Bill-payment catalogue (api.md 2.8, 4.7): data, not code, so operators can change it.
create table bill_services (
  id                  integer primary key,
  service_id          text not null unique,
  service_code        text not null,
  service_category    text not null,
  service_type        text not null,
  service_name        text not null,
  service_description text not null,
  service_handler     text not null,
  service_provider    text not null,
  service_enabled     boolean not null default true,
  service_status      text not null default 'active',
  deployed            boolean not null default true,
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now()
);

create table electricity_billers (
  id            integer primary key,
  name          text not null unique,
  -- service-type key (`<provider>_electric_prepaid`) → plan label (`PREPAID` / `POSTPAID`)
  service_types jsonb not null check (jsonb_typeof(service_types) = 'object')
);

create table pin_bundles (
  id          serial primary key,
  provider    text not null,
  amount      numeric(20,4) not null check (amount > 0),
  available   integer not null check (available >= 0),
  description text not null,
  unique (provider, amount)
);
create index pin_bundles_provider_idx on pin_bundles (provider, amount);

insert into bill_services (id, service_id, service_code, service_category, service_type, service_name,
                           service_description, service_handler, service_provider, service_enabled,
                           service_status, deployed, created_at, updated_at) values
  (1,  'AIRTIME-MTN',        'MTNVTU',     'airtime',     'mtn_vtu',              'MTN Airtime VTU',           'Instant MTN airtime top-up',                 'vtu',         'mtn',           true,  'active',   true,  '2023-01-10 09:00:00+00', '2024-03-02 11:15:00+00'),
  (2,  'AIRTIME-GLO',        'GLOVTU',     'airtime',     'glo_vtu',              'Glo Airtime VTU',           'Instant Glo airtime top-up',                 'vtu',         'glo',           true,  'active',   true,  '2023-01-10 09:00:00+00', '2024-03-02 11:15:00+00'),
  (3,  'AIRTIME-AIRTEL',     'AIRTELVTU',  'airtime',     'airtel_vtu',           'Airtel Airtime VTU',        'Instant Airtel airtime top-up',              'vtu',         'airtel',        true,  'active',   true,  '2023-01-10 09:00:00+00', '2024-03-02 11:15:00+00'),
  (4,  'AIRTIME-9MOBILE',    '9MOBILEVTU', 'airtime',     '9mobile_vtu',          '9mobile Airtime VTU',       'Instant 9mobile airtime top-up',             'vtu',         '9mobile',       true,  'active',   true,  '2023-01-10 09:00:00+00', '2024-03-02 11:15:00+00'),
  (5,  'DATA-MTN',           'MTNDATA',    'data',        'mtn_data',             'MTN Data Bundles',          'MTN mobile data plans',                      'data',        'mtn',           true,  'active',   true,  '2023-02-01 08:30:00+00', '2024-05-20 16:40:00+00'),
  (6,  'DATA-GLO',           'GLODATA',    'data',        'glo_data',             'Glo Data Bundles',          'Glo mobile data plans',                      'data',        'glo',           true,  'active',   true,  '2023-02-01 08:30:00+00', '2024-05-20 16:40:00+00'),
  (7,  'DATA-AIRTEL',        'AIRTELDATA', 'data',        'airtel_data',          'Airtel Data Bundles',       'Airtel mobile data plans',                   'data',        'airtel',        true,  'active',   true,  '2023-02-01 08:30:00+00', '2024-05-20 16:40:00+00'),
  (8,  'DATA-9MOBILE',       '9MOBILEDATA','data',        '9mobile_data',         '9mobile Data Bundles',      '9mobile mobile data plans',                  'data',        '9mobile',       true,  'active',   true,  '2023-02-01 08:30:00+00', '2024-05-20 16:40:00+00'),
  (9,  'DATA-SPECTRANET',    'SPECTRANET', 'data',        'spectranet_data',      'Spectranet 4G LTE',         'Spectranet internet subscription',           'data',        'spectranet',    true,  'active',   true,  '2023-02-01 08:30:00+00', '2024-05-20 16:40:00+00'),
  (10, 'DATA-SMILE',         'SMILE',      'data',        'smile_data',           'Smile 4G LTE',              'Smile internet bundles',                     'data',        'smile',         false, 'inactive', true,  '2023-02-01 08:30:00+00', '2024-06-11 10:05:00+00'),
  (11, 'TV-DSTV',            'DSTV',       'cable_tv',    'dstv',                 'DStv Subscription',         'DStv bouquet renewal and change',            'multichoice', 'multichoice',   true,  'active',   true,  '2023-03-15 12:00:00+00', '2024-04-09 07:45:00+00'),
  (12, 'TV-GOTV',            'GOTV',       'cable_tv',    'gotv',                 'GOtv Subscription',         'GOtv bouquet renewal',                       'multichoice', 'multichoice',   true,  'active',   true,  '2023-03-15 12:00:00+00', '2024-04-09 07:45:00+00'),
  (13, 'TV-STARTIMES',       'STARTIMES',  'cable_tv',    'startimes',            'StarTimes Subscription',    'StarTimes bouquet renewal',                  'startimes',   'startimes',     true,  'active',   true,  '2023-03-15 12:00:00+00', '2024-04-09 07:45:00+00'),
  (14, 'ELEC-IKEDC-PRE',     'IKEDCPRE',   'electricity', 'ikeja_electric_prepaid',  'Ikeja Electric Prepaid',  'Ikeja Electric prepaid meter token',         'electricity', 'ikeja_electric', true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (15, 'ELEC-IKEDC-POST',    'IKEDCPOST',  'electricity', 'ikeja_electric_postpaid', 'Ikeja Electric Postpaid', 'Ikeja Electric postpaid bill payment',       'electricity', 'ikeja_electric', true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (16, 'ELEC-EKEDC-PRE',     'EKEDCPRE',   'electricity', 'eko_electric_prepaid',    'Eko Electric Prepaid',    'Eko Electricity prepaid meter token',        'electricity', 'eko_electric',   true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (17, 'ELEC-EKEDC-POST',    'EKEDCPOST',  'electricity', 'eko_electric_postpaid',   'Eko Electric Postpaid',   'Eko Electricity postpaid bill payment',      'electricity', 'eko_electric',   true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (18, 'ELEC-AEDC-PRE',      'AEDCPRE',    'electricity', 'abuja_electric_prepaid',  'Abuja Electric Prepaid',  'Abuja Electricity prepaid meter token',      'electricity', 'abuja_electric', true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (19, 'ELEC-AEDC-POST',     'AEDCPOST',   'electricity', 'abuja_electric_postpaid', 'Abuja Electric Postpaid', 'Abuja Electricity postpaid bill payment',    'electricity', 'abuja_electric', true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (20, 'ELEC-PHED-PRE',      'PHEDPRE',    'electricity', 'portharcourt_electric_prepaid', 'Port Harcourt Electric Prepaid', 'Port Harcourt Electricity prepaid meter token', 'electricity', 'portharcourt_electric', true, 'active', true, '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (21, 'ELEC-KEDCO-PRE',     'KEDCOPRE',   'electricity', 'kano_electric_prepaid',   'Kano Electric Prepaid',   'Kano Electricity prepaid meter token',       'electricity', 'kano_electric',  true,  'active',   true,  '2023-04-01 10:00:00+00', '2024-02-28 14:20:00+00'),
  (22, 'EPIN-MTN',           'MTNEPIN',    'epin',        'mtn_epin',             'MTN Recharge PIN',          'Printable MTN recharge card PINs',           'epin',        'mtn',           true,  'active',   true,  '2023-05-05 09:30:00+00', '2024-01-17 13:00:00+00'),
  (23, 'EPIN-GLO',           'GLOEPIN',    'epin',        'glo_epin',             'Glo Recharge PIN',          'Printable Glo recharge card PINs',           'epin',        'glo',           true,  'active',   true,  '2023-05-05 09:30:00+00', '2024-01-17 13:00:00+00'),
  (24, 'EPIN-AIRTEL',        'AIRTELEPIN', 'epin',        'airtel_epin',          'Airtel Recharge PIN',       'Printable Airtel recharge card PINs',        'epin',        'airtel',        true,  'active',   true,  '2023-05-05 09:30:00+00', '2024-01-17 13:00:00+00'),
  (25, 'EPIN-9MOBILE',       '9MOBILEEPIN','epin',        '9mobile_epin',         '9mobile Recharge PIN',      'Printable 9mobile recharge card PINs',       'epin',        '9mobile',       true,  'active',   true,  '2023-05-05 09:30:00+00', '2024-01-17 13:00:00+00'),
  (26, 'EPIN-SPECTRANET',    'SPECTRANETPIN','epin',      'spectranet_epin',      'Spectranet Recharge PIN',   'Spectranet internet recharge PINs',          'epin',        'spectranet',    true,  'active',   true,  '2023-05-05 09:30:00+00', '2024-01-17 13:00:00+00'),
  (27, 'EDU-WAEC',           'WAEC',       'education',   'waec_result_checker',  'WAEC Result Checker',       'WAEC result checker scratch card PIN',       'education',   'waec',          true,  'active',   true,  '2023-06-20 11:00:00+00', '2024-07-01 09:10:00+00'),
  (28, 'EDU-JAMB',           'JAMB',       'education',   'jamb_epin',            'JAMB UTME e-PIN',           'JAMB UTME registration e-PIN',               'education',   'jamb',          true,  'active',   false, '2023-06-20 11:00:00+00', '2024-07-01 09:10:00+00');

insert into electricity_billers (id, name, service_types) values
  (1,  'Ikeja Electric Distribution Company (IKEDC)',       '{"ikeja_electric_prepaid": "PREPAID", "ikeja_electric_postpaid": "POSTPAID"}'),
  (2,  'Eko Electricity Distribution Company (EKEDC)',      '{"eko_electric_prepaid": "PREPAID", "eko_electric_postpaid": "POSTPAID"}'),
  (3,  'Abuja Electricity Distribution Company (AEDC)',     '{"abuja_electric_prepaid": "PREPAID", "abuja_electric_postpaid": "POSTPAID"}'),
  (4,  'Port Harcourt Electricity Distribution Company (PHED)', '{"portharcourt_electric_prepaid": "PREPAID", "portharcourt_electric_postpaid": "POSTPAID"}'),
  (5,  'Kano Electricity Distribution Company (KEDCO)',     '{"kano_electric_prepaid": "PREPAID", "kano_electric_postpaid": "POSTPAID"}'),
  (6,  'Ibadan Electricity Distribution Company (IBEDC)',   '{"ibadan_electric_prepaid": "PREPAID", "ibadan_electric_postpaid": "POSTPAID"}'),
  (7,  'Enugu Electricity Distribution Company (EEDC)',     '{"enugu_electric_prepaid": "PREPAID", "enugu_electric_postpaid": "POSTPAID"}'),
  (8,  'Jos Electricity Distribution Company (JED)',        '{"jos_electric_prepaid": "PREPAID", "jos_electric_postpaid": "POSTPAID"}'),
  (9,  'Kaduna Electric Distribution Company (KAEDCO)',     '{"kaduna_electric_prepaid": "PREPAID"}'),
  (10, 'Benin Electricity Distribution Company (BEDC)',     '{"benin_electric_prepaid": "PREPAID", "benin_electric_postpaid": "POSTPAID"}');

insert into pin_bundles (provider, amount, available, description) values
  ('mtn',        100,   500, 'MTN N100 recharge PIN'),
  ('mtn',        200,   500, 'MTN N200 recharge PIN'),
  ('mtn',        400,   300, 'MTN N400 recharge PIN'),
  ('mtn',        500,   300, 'MTN N500 recharge PIN'),
  ('mtn',        1000,  200, 'MTN N1000 recharge PIN'),
  ('glo',        100,   500, 'Glo N100 recharge PIN'),
  ('glo',        200,   500, 'Glo N200 recharge PIN'),
  ('glo',        500,   300, 'Glo N500 recharge PIN'),
  ('glo',        1000,  200, 'Glo N1000 recharge PIN'),
  ('airtel',     100,   500, 'Airtel N100 recharge PIN'),
  ('airtel',     200,   500, 'Airtel N200 recharge PIN'),
  ('airtel',     500,   300, 'Airtel N500 recharge PIN'),
  ('airtel',     1000,  200, 'Airtel N1000 recharge PIN'),
  ('9mobile',    100,   400, '9mobile N100 recharge PIN'),
  ('9mobile',    200,   400, '9mobile N200 recharge PIN'),
  ('9mobile',    500,   250, '9mobile N500 recharge PIN'),
  ('9mobile',    1000,  150, '9mobile N1000 recharge PIN'),
  ('spectranet', 1000,  100, 'Spectranet N1000 internet recharge PIN'),
  ('spectranet', 2000,  100, 'Spectranet N2000 internet recharge PIN'),
  ('spectranet', 5000,  80,  'Spectranet N5000 internet recharge PIN'),
  ('spectranet', 7000,  50,  'Spectranet N7000 internet recharge PIN'),
  ('spectranet', 10000, 50,  'Spectranet N10000 internet recharge PIN');
