import { escapeControlChars } from './terminal-safe.ts';

/**
 * Plain-text table for terminal output (the one formatter of `sql`, `status` and the demo): columns padded
 * to their widest cell, cut at `maxWidth` characters (60 by default, so one long value does not wrap every
 * line), values stringified, and control characters of names and values shown as escapes
 * (terminal-safe.ts).
 */
export function formatTable(
  rows: readonly Record<string, unknown>[],
  columns?: readonly string[],
  { maxWidth = 60 }: { maxWidth?: number } = {},
): string {
  const names = columns ?? (rows[0] ? Object.keys(rows[0]) : []);
  if (names.length === 0) return '(no rows)';
  const text = (value: unknown): string => {
    if (value === null || value === undefined) return '';
    if (value instanceof Date) return value.toISOString();
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
  };
  const cells = rows.map((row) => names.map((name) => escapeControlChars(text(row[name]))));
  const widths = names.map((name, i) =>
    Math.min(maxWidth, Math.max(escapeControlChars(name).length, ...cells.map((c) => c[i]!.length))),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => (v.length > widths[i]! ? `${v.slice(0, widths[i]! - 1)}…` : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [
    line(names.map(escapeControlChars)),
    line(widths.map((w) => '-'.repeat(w))),
    ...cells.map(line),
  ].join('\n');
}

/** Left-aligned columns with a header rule, uncut (status's tables): one string per line. */
export function formatColumns(header: string[], rows: string[][]): string[] {
  const records = rows.map((row) => Object.fromEntries(header.map((name, i) => [name, row[i] ?? ''])));
  return formatTable(records, header, { maxWidth: Number.POSITIVE_INFINITY }).split('\n');
}
