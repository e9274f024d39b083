/**
 * The keyword a SQL statement starts with, past whitespace, comments (`--` and nested `/* … *\/`) and
 * opening parentheses, lower-cased; '' when there is none. Not a parser: it is the first, cheap
 * check of `runReadOnlyQuery` (read-only-query.ts), which sends the text to the database only when it
 * starts like a query; the database's own refusals (one statement, read-only transaction, the login's
 * rights) hold whatever this lets through.
 */
export function firstKeyword(text: string): string {
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s|\(/.test(c)) i += 1;
    else if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (text.startsWith('/*', i)) i = afterBlockComment(text, i);
    else break;
  }
  return /^[a-z_]+/i.exec(text.slice(i))?.[0]?.toLowerCase() ?? '';
}

/** PostgreSQL block comments nest. */
function afterBlockComment(text: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < text.length) {
    if (text.startsWith('/*', i)) {
      depth += 1;
      i += 2;
    } else if (text.startsWith('*/', i)) {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else i += 1;
  }
  return text.length;
}
