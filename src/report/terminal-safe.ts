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
