/** Bill-payment catalogue shapes (docs/api.md#bill-payments) and the RFC dates of the `Bills-date` header. */
import * as v from 'valibot';
import { described } from './shapes';

export const SERVICE_GROUPINGS = ['category', 'billers'] as const;
type ServiceGrouping = (typeof SERVICE_GROUPINGS)[number];

export type BillServiceRow = {
  id: number;
  serviceId: string;
  serviceCode: string;
  serviceCategory: string;
  serviceType: string;
  serviceName: string;
  serviceDescription: string;
  serviceHandler: string;
  serviceProvider: string;
  serviceEnabled: boolean;
  serviceStatus: string;
  deployed: boolean;
  createdAt: Date;
  updatedAt: Date;
};
export type ElectricityBillerRow = { name: string; serviceTypes: Record<string, string> };
export type PinBundleRow = { amount: string; available: number; description: string };

/** `YYYY-MM-DD HH:MM:SS` (UTC), the bill-payment timestamp form. */
function formatBillsTimestamp(value: Date): string {
  return value
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, '');
}

const BillsTimestamp = v.pipe(
  v.string(),
  v.description('`YYYY-MM-DD HH:MM:SS` (UTC).'),
  v.examples(['2025-05-01 13:45:00']),
);
const StringBoolean = v.pipe(v.picklist(['true', 'false']), v.description('A boolean as a string.'));

/** A service item (docs/api.md#bill-payments): types `serializeBillService` and documents it. */
export const BillServiceSchema = v.pipe(
  v.object({
    id: v.number(),
    serviceId: v.string(),
    serviceCode: v.string(),
    serviceCategory: v.string(),
    serviceType: v.string(),
    serviceName: v.string(),
    serviceDescription: v.string(),
    serviceHandler: v.string(),
    serviceProvider: v.string(),
    serviceEnabled: StringBoolean,
    serviceStatus: v.string(),
    deployed: StringBoolean,
    created_at: BillsTimestamp,
    updated_at: BillsTimestamp,
  }),
  v.description('A biller service.'),
  v.examples([
    {
      id: 1,
      serviceId: 'SRV-001',
      serviceCode: 'IKEDC_PREPAID',
      serviceCategory: 'electricity',
      serviceType: 'prepaid',
      serviceName: 'Ikeja Electric Prepaid',
      serviceDescription: 'Ikeja Electric prepaid meters',
      serviceHandler: 'electricity',
      serviceProvider: 'ikeja',
      serviceEnabled: 'true' as const,
      serviceStatus: 'active',
      deployed: 'true' as const,
      created_at: '2025-01-01 00:00:00',
      updated_at: '2025-01-01 00:00:00',
    },
  ]),
);
type BillServiceItem = v.InferOutput<typeof BillServiceSchema>;

/** Booleans as the strings `"true"`/`"false"`, as the bill-payment API shows them (docs/api.md#bill-payments). */
export function serializeBillService(service: BillServiceRow): BillServiceItem {
  return {
    id: service.id,
    serviceId: service.serviceId,
    serviceCode: service.serviceCode,
    serviceCategory: service.serviceCategory,
    serviceType: service.serviceType,
    serviceName: service.serviceName,
    serviceDescription: service.serviceDescription,
    serviceHandler: service.serviceHandler,
    serviceProvider: service.serviceProvider,
    serviceEnabled: service.serviceEnabled ? 'true' : 'false',
    serviceStatus: service.serviceStatus,
    deployed: service.deployed ? 'true' : 'false',
    created_at: formatBillsTimestamp(service.createdAt),
    updated_at: formatBillsTimestamp(service.updatedAt),
  };
}

/** Service items keyed by category (`serviceCategory`) or by biller (`serviceProvider`), in input order. */
export function groupBillServices(
  items: BillServiceItem[],
  grouping: ServiceGrouping,
): Record<string, BillServiceItem[]> {
  const groups: Record<string, BillServiceItem[]> = {};
  for (const item of items) {
    const key = grouping === 'category' ? item.serviceCategory : item.serviceProvider;
    (groups[key] ??= []).push(item);
  }
  return groups;
}

export const ElectricityBillerSchema = v.pipe(
  v.object({
    name: described(v.string(), 'Full provider title.'),
    service_types: described(
      v.record(v.string(), v.string()),
      'Service-type key (`<provider>_electric_prepaid`, ...) to plan label (`PREPAID`, `POSTPAID`).',
    ),
  }),
  v.description('An electricity biller.'),
  v.examples([
    {
      name: 'Ikeja Electric',
      service_types: { ikeja_electric_prepaid: 'PREPAID', ikeja_electric_postpaid: 'POSTPAID' },
    },
  ]),
);

export const serializeElectricityBiller = (
  biller: ElectricityBillerRow,
): v.InferOutput<typeof ElectricityBillerSchema> => ({
  name: biller.name,
  service_types: biller.serviceTypes,
});

export const PinBundleSchema = v.pipe(
  v.object({
    amount: v.number(),
    available: described(v.number(), 'The maximum quantity purchasable.'),
    description: v.string(),
  }),
  v.description('A pin bundle of a provider.'),
  v.examples([{ amount: 100, available: 50, description: 'MTN 100 airtime pin' }]),
);

/** A pin bundle: `amount` is a JSON number (catalogue prices are whole naira). */
export const serializePinBundle = (bundle: PinBundleRow): v.InferOutput<typeof PinBundleSchema> => ({
  amount: Number(bundle.amount),
  available: bundle.available,
  description: bundle.description,
});

/** The bill-payment envelope (docs/api.md#bill-payments) around `data`; errors use it too, with `status: "error"`. */
export const billsEnvelopeSchema = <const TData extends v.GenericSchema>(data: TData, description: string) =>
  v.pipe(
    v.object({
      status: described(v.picklist(['success', 'error']), '`success`, or `error` on errors.'),
      message: v.string(),
      code: described(v.number(), 'The HTTP status.'),
      data,
    }),
    v.description(description),
  );

export function billsEnvelope<T>(data: T, message: string, code = 200) {
  return { status: code < 400 ? 'success' : 'error', message, code, data };
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const LONG_DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
/** RFC 2822 zone names (section 4.3), in minutes east of UTC. */
const ZONES: Record<string, number> = {
  ut: 0,
  gmt: 0,
  z: 0,
  est: -300,
  edt: -240,
  cst: -360,
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480,
  pdt: -420,
};

const MONTH = '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)';
/** RFC 2822 (RFC 7231's IMF-fixdate is the case `Sun, 06 Nov 1994 08:49:37 GMT`). */
const RFC_2822 = new RegExp(
  [
    '^(?:(sun|mon|tue|wed|thu|fri|sat),\\s*)?',
    `(\\d{1,2})\\s+${MONTH}\\s+(\\d{4})`,
    '\\s+(\\d{2}):(\\d{2})(?::(\\d{2}))?',
    '\\s+([+-]\\d{4}|[a-z]{1,3})$',
  ].join(''),
  'i',
);
/** RFC 850, obsolete but accepted by RFC 7231: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC_850 = new RegExp(
  [
    '^(sunday|monday|tuesday|wednesday|thursday|friday|saturday),',
    `\\s*(\\d{2})-${MONTH}-(\\d{2})`,
    '\\s+(\\d{2}):(\\d{2}):(\\d{2})\\s+GMT$',
  ].join(''),
  'i',
);
/** C's asctime(), obsolete but accepted by RFC 7231: `Sun Nov  6 08:49:37 1994`. */
const ASCTIME = new RegExp(
  `^(sun|mon|tue|wed|thu|fri|sat)\\s+${MONTH}\\s+(\\d{1,2})\\s+(\\d{2}):(\\d{2}):(\\d{2})\\s+(\\d{4})$`,
  'i',
);

type DateParts = {
  weekday?: number;
  day: number;
  month: number;
  year: number;
  hour: number;
  minute: number;
  second: number;
  offsetMinutes: number;
};

function toDate(parts: DateParts): Date | null {
  const { day, month, year, hour, minute, second, offsetMinutes } = parts;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const local = new Date(Date.UTC(year, month, day, hour, minute, second));
  // Reject days the calendar does not have (31 Feb) and a weekday that contradicts the date.
  if (local.getUTCDate() !== day || local.getUTCMonth() !== month) return null;
  if (parts.weekday !== undefined && local.getUTCDay() !== parts.weekday) return null;
  return new Date(local.getTime() - offsetMinutes * 60_000);
}

/**
 * Parses a date in the formats HTTP (RFC 7231 section 7.1.1.1) and Internet mail (RFC 2822) use;
 * anything else, or a date that does not exist, is null.
 */
export function parseRfcDate(text: string, now = new Date()): Date | null {
  const value = text.trim().replace(/\s+/g, ' ');
  let match = RFC_2822.exec(value);
  if (match) {
    const [, weekday, day, month, year, hour, minute, second = '0', zone = ''] = match;
    const offsetMinutes = /^[+-]\d{4}$/.test(zone)
      ? (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(3, 5)))
      : ZONES[zone.toLowerCase()];
    if (offsetMinutes === undefined || Number(zone.slice(3, 5)) > 59) return null;
    return toDate({
      weekday: weekday === undefined ? undefined : DAYS.indexOf(weekday.toLowerCase()),
      day: Number(day),
      month: MONTHS.indexOf(month!.toLowerCase()),
      year: Number(year),
      hour: Number(hour),
      minute: Number(minute),
      second: Number(second),
      offsetMinutes,
    });
  }
  match = RFC_850.exec(value);
  if (match) {
    const [, weekday, day, month, shortYear, hour, minute, second] = match;
    // RFC 7231: a two-digit year more than 50 years in the future is in the past century.
    let year = 2000 + Number(shortYear);
    if (year > now.getUTCFullYear() + 50) year -= 100;
    return toDate({
      weekday: LONG_DAYS.indexOf(weekday!.toLowerCase()),
      day: Number(day),
      month: MONTHS.indexOf(month!.toLowerCase()),
      year,
      hour: Number(hour),
      minute: Number(minute),
      second: Number(second),
      offsetMinutes: 0,
    });
  }
  match = ASCTIME.exec(value);
  if (match) {
    const [, weekday, month, day, hour, minute, second, year] = match;
    return toDate({
      weekday: DAYS.indexOf(weekday!.toLowerCase()),
      day: Number(day),
      month: MONTHS.indexOf(month!.toLowerCase()),
      year: Number(year),
      hour: Number(hour),
      minute: Number(minute),
      second: Number(second),
      offsetMinutes: 0,
    });
  }
  return null;
}
