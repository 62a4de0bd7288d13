/** `YYYY-MM-DDTHH:MM:SSZ`, the timestamp form of the API (docs/api.md#api-behaviour-worth-knowing). */
export function formatTimestamp(value: Date): string {
  return value.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function formatNullableTimestamp(value: Date | null): string | null {
  return value === null ? null : formatTimestamp(value);
}

const FILTER_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Parses a list filter's date (`YYYY-MM-DD HH:MM` (docs/api.md#api-behaviour-worth-knowing), also `YYYY-MM-DD`, seconds
 * and an explicit offset). Times without an offset are UTC. Returns null for anything else.
 */
export function parseFilterDate(text: string): Date | null {
  const match = FILTER_DATE.exec(text.trim());
  if (!match) return null;
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone] = match;
  const offset =
    zone === undefined || zone === 'Z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  // Fractions of a second count to the millisecond (an instant copied from a timestamp the service gave keeps its
  // precision).
  const parsed = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${offset}`);
  // Outside 1900..2099 a filter date is a typo, and year 0 or 275760 would not survive PostgreSQL.
  const parsedYear = parsed.getUTCFullYear();
  if (Number.isNaN(parsed.getTime()) || parsedYear < 1900 || parsedYear >= 2100) return null;
  // Reject dates that JS silently rolls over (2024-02-31 → March 2).
  if (offset === 'Z' && parsed.getUTCDate() !== Number(day)) return null;
  return parsed;
}
