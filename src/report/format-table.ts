/**
 * Text for a terminal: a table of rows, and any value made safe to print (no control sequences).
 */

/**
 * Plain-text table for terminal output (the one formatter of `sql`, `status` and the demo): columns padded
 * to their widest cell, cut at `maxWidth` characters (60 by default, so one long value does not wrap every
 * line), values stringified, and control characters of names and values shown as escapes
 * (format-table.ts).
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

/**
 * Text from the warehouse (platform data, anyone's SQL) printed to a terminal must not drive it: an
 * ESC or C1 control (`\x1b]…`, `\x9b…`) can rewrite the screen, set the title, or on some terminals
 * answer back; a bidi override or line separator can make a value read as something else. These
 * functions show such characters as escapes instead.
 */

/** C0 and C1 controls, DEL, line/paragraph separators and the bidi embedding/override/isolate marks. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** For table cells and messages: `\n`, `\t`, `\r` named, any other unsafe character as `\xNN` / `\uNNNN`. */
export function escapeControlChars(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return NAMED[c] ?? (code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`);
  });
}

/**
 * A JSON line that is still valid JSON and carries the same value: JSON.stringify already escapes C0
 * controls, so this escapes the rest (DEL, C1, separators, bidi) as `\uNNNN`, which JSON allows for
 * any character.
 */
export function terminalSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE, (c) => `\\u${hex(c.charCodeAt(0), 4)}`);
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}
