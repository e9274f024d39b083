/**
 * Encodes rows for `COPY … FROM STDIN` in PostgreSQL's text format: the fastest way into Postgres (and
 * into PGlite through `/dev/blob`). Text rather than CSV because our biggest values are JSON documents:
 * CSV must double every `"` (a full copy of each document), text only escapes backslashes and control
 * characters, which JSON.stringify output rarely contains, so most values pass through untouched.
 * NULL is `\N`; arrays become Postgres array literals (time[] / value[]); objects JSON; Dates ISO.
 */

const CHUNK_CHARS = 1 << 20;
const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
/** Array elements that need no quoting inside an array literal (numbers, ISO timestamps, plain words). */
const BARE_ELEMENT = /^[\w:.+-]+$/;

function escapeText(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c]!) : text;
}

function arrayElement(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot COPY a non-finite number (${value})`);
    return String(value);
  }
  const text = value instanceof Date ? value.toISOString() : String(value);
  if (BARE_ELEMENT.test(text) && text.toUpperCase() !== 'NULL') return text;
  return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

export function encodeCopyValue(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'string') return escapeText(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot COPY a non-finite number (${value})`);
    return String(value);
  }
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return escapeText(`{${value.map(arrayElement).join(',')}}`);
  return escapeText(JSON.stringify(value));
}

/** One row's line of COPY text (without the newline). */
export function encodeCopyRow(row: readonly unknown[]): string {
  let line = '';
  for (let i = 0; i < row.length; i += 1) line += (i === 0 ? '' : '\t') + encodeCopyValue(row[i]);
  return line;
}

/**
 * A row already encoded by `encodeCopyRow`: the loader encodes a batch's new records while the previous
 * batch is still being written, so its own transaction only ships the bytes.
 */
export class EncodedCopyRow {
  readonly line: string;
  constructor(line: string) {
    this.line = line;
  }
}

export type CopyRow = readonly unknown[] | EncodedCopyRow;

/** Yields the COPY text in chunks of about 1 MiB, so a big batch never becomes one giant string. */
export function* encodeCopyChunks(rows: Iterable<CopyRow>): Generator<string> {
  let lines: string[] = [];
  let size = 0;
  for (const row of rows) {
    const line = row instanceof EncodedCopyRow ? row.line : encodeCopyRow(row);
    lines.push(line);
    size += line.length;
    if (size >= CHUNK_CHARS) {
      lines.push('');
      yield lines.join('\n');
      lines = [];
      size = 0;
    }
  }
  if (lines.length > 0) {
    lines.push('');
    yield lines.join('\n');
  }
}

/** `COPY table (columns) FROM <source>` (text format) with quoted identifiers. */
export function copyStatement(table: string, columns: readonly string[], source: string): string {
  const cols = columns.map((c) => `"${c.replaceAll('"', '""')}"`).join(', ');
  return `copy ${table} (${cols}) from ${source}`;
}
