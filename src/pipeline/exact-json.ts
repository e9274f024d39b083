/**
 * JSON read from the platform with every number exactly as it was sent. `JSON.parse` turns each number
 * into a double: `12345678901234567890` becomes `12345678901234567000`, `1.50` becomes `1.5`, `1e400`
 * becomes Infinity (written back as `null`). A raw item's `raw` is stored as the platform sent it, so
 * the parse that produces it keeps such a number as its source text instead: a `JsonNumberText`
 * (`JSON.rawJSON`, Node ≥ 21), which `JSON.stringify` writes back verbatim. Every other number stays a
 * plain JS number.
 *
 * Node's own parser does the work (the reviver's `context.source`, Node ≥ 21): no JSON library, and
 * the reviver only runs for the rare text that holds a number a double would change, found by one
 * scan (`MAY_CHANGE`, then the numbers it flags checked one by one); a text without one is parsed by
 * `JSON.parse` alone. bench/exact-json.ts measures what it costs.
 */

/** A number as its JSON source text (`JSON.rawJSON`): `JSON.stringify` writes the text back unchanged. */
export interface JsonNumberText {
  readonly rawJSON: string;
}

/** The parts of the ES2024+ JSON object that the TypeScript lib of this project does not declare yet. */
interface JsonWithRawJson {
  rawJSON(text: string): JsonNumberText;
  isRawJSON(value: unknown): boolean;
  parse(
    text: string,
    reviver: (key: string, value: unknown, context: { source?: string }) => unknown,
  ): unknown;
}

const NATIVE = JSON as unknown as JsonWithRawJson;

export function isJsonNumberText(value: unknown): value is JsonNumberText {
  return NATIVE.isRawJSON(value);
}

/** The JSON number `text` (already checked against the JSON grammar) as a value that stringifies to it. */
export function jsonNumberText(text: string): JsonNumberText {
  return NATIVE.rawJSON(text);
}

/**
 * A number token whose text a double may not give back (String(Number(t)) !== t), or a superset of
 * them: a token starts after `:`, `,` or `[` (or the text's start) and whitespace. Such a token has
 * an exponent, or starts with `-0`, or is a fraction ending in 0 (`1.50`), or has 16 digits or more
 * (a double holds 15 for sure), or is below 1e-6 (`0.000000…`, printed with an exponent). Any
 * other token, 15 significant digits at most in plain form, is exactly what String() prints for its
 * double. Matches inside strings only cost the slower parse; test/unit/exact-json.test.ts checks
 * that no changing token escapes it.
 */
const MAY_CHANGE =
  /(?:^|[:,[])[ \t\n\r]*(?:-0|-?\d[\d.]*[eE]|-?\d+\.\d*0[ \t\n\r]*(?:[,\]}]|$)|-?(?:\d\.?){16}|-?0\.0{6})/;

/** Every number token of a JSON text (and text inside strings that reads like one), captured. */
const NUMBER_TOKEN =
  /(?:^|[:,[])[ \t\n\r]*(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)(?=[ \t\n\r]*(?:[,\]}]|$))/g;

/**
 * Whether some number of `text` is one a double changes. Most texts the scan lets through hold only
 * long numbers a double gives back as written (`72.39999999999999`, what a platform printing the
 * shortest form of its doubles sends): those are checked one by one here, and need no reviver.
 */
function holdsChangedNumber(text: string): boolean {
  if (!MAY_CHANGE.test(text)) return false;
  for (const match of text.matchAll(NUMBER_TOKEN)) {
    const token = match[1]!;
    if (String(Number(token)) !== token) return true;
  }
  return false;
}

function keepSource(_key: string, value: unknown, context: { source?: string }): unknown {
  if (typeof value !== 'number' || context.source === undefined) return value;
  return String(value) === context.source ? value : NATIVE.rawJSON(context.source);
}

/** `JSON.parse(text)`, with each number a double would change kept as its text (throws like JSON.parse). */
export function parseJsonExactly(text: string): unknown {
  return holdsChangedNumber(text) ? NATIVE.parse(text, keepSource) : JSON.parse(text);
}
