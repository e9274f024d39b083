/**
 * Timestamps arrive as `YYYY-MM-DDThh:mm:ssZ` (v2, sometimes with milliseconds) and in the legacy API
 * also as `YYYY-MM-DDThh:mm:ss.ms-hh:mm`. Both (and a missing zone, read as UTC, and a bare date, read as
 * UTC midnight) become one canonical ISO string in UTC, so Postgres never guesses a time zone.
 */

const PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** The v2 form (UTC, optional milliseconds): the hot path, hundreds of thousands per intraday batch. */
const UTC_FORM = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,3})?Z$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Canonical UTC ISO string, or null when `value` is not a timestamp in an accepted form. */
export function parseTimestamp(value: string): string | null {
  if (UTC_FORM.test(value)) {
    // Checked field by field, no Date objects: this runs once per intraday point.
    const y = Number(value.slice(0, 4));
    const mo = Number(value.slice(5, 7));
    const d = Number(value.slice(8, 10));
    if (y === 0 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return null;
    if (
      Number(value.slice(11, 13)) > 23 ||
      Number(value.slice(14, 16)) > 59 ||
      Number(value.slice(17, 19)) > 59
    ) {
      return null;
    }
    const millis = value.length === 20 ? '000' : value.slice(20, -1).padEnd(3, '0');
    return `${value.slice(0, 19)}.${millis}Z`;
  }
  const m = PATTERN.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const millis = `${frac}000`.slice(0, 3);
  let offset = 'Z';
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone[0];
    const digits = zone.slice(1).replace(':', '');
    const hh = digits.slice(0, 2);
    const mm = digits.slice(2, 4) || '00';
    offset = `${sign}${hh}:${mm}`;
  }
  const text = `${y}-${mo}-${d}T${h}:${mi}:${s}.${millis}${offset}`;
  const time = Date.parse(text);
  if (Number.isNaN(time)) return null;
  // Date.parse rolls 2024-02-31 over to March: reject dates whose fields do not survive the round trip.
  const check = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) return null;
  // Year 0 exists in ISO 8601 but not in PostgreSQL (1 BC is year 0 there only as "0001 BC").
  if (Number(y) === 0) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 60) return null;
  return new Date(time).toISOString();
}
