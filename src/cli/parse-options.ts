/** Parsing and checking of command-line values; every failure is a UsageError naming the fix (exit 2). */
import { UsageError } from '../errors/index.ts';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function parseDateOption(name: string, value: string): string {
  if (value === 'today') return new Date().toISOString().slice(0, 10);
  const days = /^(\d+)d$/.exec(value);
  if (days) return new Date(Date.now() - Number(days[1]) * 86_400_000).toISOString().slice(0, 10);
  if (
    !DATE.test(value) ||
    Number.isNaN(Date.parse(`${value}T00:00:00Z`)) ||
    new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) !== value
  ) {
    throw new UsageError(
      `--${name} ${value} is not a date`,
      `give --${name} as YYYY-MM-DD (UTC), "today", or a number of days ago such as 30d`,
    );
  }
  return value;
}

export function parseDateRange(from: string, to: string): { from: string; to: string } {
  const range = { from: parseDateOption('from', from), to: parseDateOption('to', to) };
  if (range.from > range.to)
    throw new UsageError(`--from ${range.from} is after --to ${range.to}`, 'swap the two dates');
  return range;
}

export function parseInstantOption(name: string, value: string): Date {
  const days = /^(\d+)d$/.exec(value);
  if (days) return new Date(Date.now() - Number(days[1]) * 86_400_000);
  if (value === 'now') return new Date();
  const parsed = Date.parse(DATE.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(parsed)) {
    throw new UsageError(
      `--${name} ${value} is not a time`,
      `give --${name} as an ISO 8601 time (2026-01-31T00:00:00Z), a date, "now" or 30d`,
    );
  }
  return new Date(parsed);
}

export function parseList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  return items.length ? items : undefined;
}

export function parsePositiveInt(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new UsageError(`--${name} ${value} is not a whole number`, `give --${name} as a whole number ≥ 0`);
  return n;
}

/** A share written `5%`, `100%` or `0.05`: a number in (0, 1]. */
export function parseShare(name: string, value: string): number {
  const text = value.trim();
  const share = text.endsWith('%') ? Number(text.slice(0, -1)) / 100 : Number(text);
  if (!Number.isFinite(share) || share <= 0 || share > 1 || text === '' || text === '%')
    throw new UsageError(
      `--${name} ${value} is not a share`,
      `give --${name} as a percentage (5%, 100%) or a fraction (0.05)`,
    );
  return share;
}
