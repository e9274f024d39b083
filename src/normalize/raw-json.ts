/**
 * The raw JSON text of an item, as it will be stored in a jsonb column. PostgreSQL refuses two things
 * JSON allows: the NUL character (`\u0000`) and unpaired UTF-16 surrogates. Such an item would make the
 * whole batch's transaction fail, so it is detected here and quarantined instead.
 */

// JSON.stringify escapes NUL as \u0000 and lone surrogates as \udXXX (paired ones stay literal). The
// look-behind skips an escaped backslash followed by the letters "u0000".
const UNSTORABLE = /(?<!\\)(?:\\\\)*\\u(0000|d[89a-f][0-9a-f]{2})/i;

export type RawText = { ok: true; text: string } | { ok: false; text: string; reason: string };

export function rawJsonText(raw: unknown): RawText {
  let text: string;
  try {
    text = JSON.stringify(raw) ?? 'null';
  } catch (error) {
    return { ok: false, text: String(raw), reason: `not serializable as JSON: ${(error as Error).message}` };
  }
  // Almost no document has a \u escape at all: skip the (slower) look-behind regex for those.
  const bad = text.includes('\\u') ? UNSTORABLE.exec(text) : null;
  if (bad) {
    const what = bad[1] === '0000' ? 'a NUL character (\\u0000)' : 'an unpaired UTF-16 surrogate';
    return { ok: false, text, reason: `contains ${what}, which PostgreSQL cannot store` };
  }
  return { ok: true, text };
}
