/**
 * The date strings a merchant may send for `expiry_date` and `start_date` (docs/api.md#collection-requests):
 * `tomorrow`, `N minutes|hours|days|weeks`, `DD/MM/YYYY`, `DD/MM/YYYY HH:MM[:SS]`, and ISO 8601
 * for JSON clients. Times are UTC. Hand-written because the grammar is this small and strict; a
 * general date parser would accept far more than the API allows.
 */
const UNIT_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 } as const;
const RELATIVE = /^(\d{1,6})\s*(minute|hour|day|week)s?$/i;
const DAY_FIRST = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$/;
const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * No date a merchant gives may lie at or beyond this instant (nor before the epoch): far enough for
 * any real schedule, near enough that every date stays printable and storable, whatever a relative
 * form like `999999 weeks` would otherwise reach.
 */
const DATE_HORIZON = new Date(Date.UTC(2100, 0, 1));
export const DATE_HORIZON_TEXT = '01/01/2100';

/** A real instant from 1970 up to (not including) the horizon. */
export function withinHorizon(date: Date): boolean {
  const time = date.getTime();
  return Number.isFinite(time) && time >= 0 && time < DATE_HORIZON.getTime();
}

function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): Date | null {
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  const same =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second;
  return same ? date : null;
}

/** The instant a request date names, or null when it is not one of the forms above or not within the horizon. */
export function parseRequestDate(input: string, now: Date): Date | null {
  const parsed = parseRequestDateForm(input, now);
  return parsed !== null && withinHorizon(parsed) ? parsed : null;
}

/** True when `input` has a valid form but names an instant beyond the horizon (for a precise message). */
export function isBeyondHorizon(input: string, now: Date): boolean {
  const parsed = parseRequestDateForm(input, now);
  return parsed !== null && !withinHorizon(parsed);
}

function parseRequestDateForm(input: string, now: Date): Date | null {
  const text = input.trim();
  if (/^tomorrow$/i.test(text)) return new Date(now.getTime() + UNIT_MS.day);
  const relative = RELATIVE.exec(text);
  if (relative) {
    const unit = relative[2]!.toLowerCase() as keyof typeof UNIT_MS;
    return new Date(now.getTime() + Number(relative[1]) * UNIT_MS[unit]);
  }
  const dayFirst = DAY_FIRST.exec(text);
  if (dayFirst) {
    const [, day, month, year, hour, minute, second] = dayFirst.map((part) =>
      part === undefined ? undefined : Number(part),
    );
    return utc(year!, month!, day!, hour ?? 0, minute ?? 0, second ?? 0);
  }
  if (ISO.test(text)) {
    const withZone = /(?:Z|[+-]\d{2}:?\d{2})$/.test(text) || text.length === 10 ? text : `${text}Z`;
    const parsed = new Date(withZone.replace(' ', 'T'));
    return Number.isNaN(parsed.getTime()) ? null : parsed;
  }
  return null;
}

/**
 * `YYYY-MM-DD HH:MM:SS.ffffff+00:00`, how the API shows `expiry_date` (docs/api.md#api-behaviour-worth-knowing;
 * microseconds from PostgreSQL).
 */
export function formatSpecDate(value: Date, microseconds?: number): string {
  const iso = value.toISOString();
  const fraction = String(microseconds ?? value.getUTCMilliseconds() * 1000).padStart(6, '0');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${fraction}+00:00`;
}
