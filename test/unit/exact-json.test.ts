/**
 * parseJsonExactly: every number comes back exactly as written (JSON.stringify of the result writes
 * the source text of every number), whatever the number and wherever whitespace lies; a number a
 * double holds as written stays a plain number.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isJsonNumberText, parseJsonExactly } from '../../src/pipeline/exact-json.ts';

/** A JSON number token: any the grammar allows, long and short, and the edges of what a double prints. */
const anyToken = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.constant('0'),
      fc
        .tuple(fc.integer({ min: 1, max: 9 }), fc.stringMatching(/^[0-9]{0,24}$/))
        .map(([d, rest]) => `${d}${rest}`),
    ),
    fc.option(fc.stringMatching(/^[0-9]{1,24}$/), { nil: undefined }),
    fc.option(fc.stringMatching(/^[eE][+-]?[0-9]{1,3}$/), { nil: undefined }),
  )
  .map(([negative, int, frac, exp]) => `${negative ? '-' : ''}${int}${frac ? `.${frac}` : ''}${exp ?? ''}`);
const edgeToken = fc
  .tuple(
    fc.constantFrom('-', ''),
    fc.constantFrom(
      '0.000000',
      '0.00000',
      '0.0000000',
      '1',
      '0.',
      '100.',
      '999999999999999',
      '9007199254740993',
    ),
    fc.stringMatching(/^[0-9]{0,3}$/),
  )
  .map(([sign, head, tail]) => `${sign}${head}${tail}`)
  .filter((t) => /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(t));
const numberToken = fc.oneof(anyToken, edgeToken);

/** Text values that look like numbers and times, to meet the scan's matches inside strings. */
const plainString = fc
  .oneof(
    fc.stringMatching(/^[a-z0-9 :.,\-[\]]{0,20}$/),
    fc.constant('2024-03-01T10:30:00.000Z'),
    fc.constant('12:00:00.50'),
  )
  .map((s) => JSON.stringify(s));

type Tree =
  | { kind: 'leaf'; text: string }
  | { kind: 'array'; items: Tree[] }
  | { kind: 'object'; entries: [string, Tree][] };

const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc
      .oneof(numberToken, plainString, fc.constantFrom('true', 'false', 'null'))
      .map((text): Tree => ({ kind: 'leaf', text })),
    fc.array(tie('node'), { maxLength: 4 }).map((items): Tree => ({ kind: 'array', items })),
    fc
      .uniqueArray(fc.tuple(fc.stringMatching(/^[a-z_]{1,6}$/), tie('node')), {
        maxLength: 4,
        selector: ([key]) => key,
      })
      .map((entries): Tree => ({ kind: 'object', entries })),
  ),
})).node;

const whitespace = fc.stringMatching(/^[ \t\n\r]{0,2}$/);

/** The tree as JSON text, with `gap()` between tokens (compact when it gives ''). */
function write(t: Tree, gap: () => string): string {
  if (t.kind === 'leaf') return t.text;
  if (t.kind === 'array')
    return `[${gap()}${t.items.map((i) => `${write(i, gap)}${gap()}`).join(`,${gap()}`)}]`;
  return `{${gap()}${t.entries
    .map(([k, v]) => `${JSON.stringify(k)}${gap()}:${gap()}${write(v, gap)}${gap()}`)
    .join(`,${gap()}`)}}`;
}

describe('parseJsonExactly', () => {
  it('writes back every number exactly as sent, whatever the whitespace', () => {
    fc.assert(
      fc.property(tree, fc.array(whitespace, { minLength: 1, maxLength: 30 }), (t, gaps) => {
        let i = 0;
        const compact = write(t, () => '');
        const spaced = write(t, () => gaps[i++ % gaps.length]!);
        expect(JSON.stringify(parseJsonExactly(spaced))).toBe(compact);
        expect(JSON.stringify(parseJsonExactly(compact))).toBe(compact);
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps a plain number for a number a double holds as written, and the text for the others', () => {
    for (const text of [
      '12345678901234567890',
      '1.50',
      '1e3',
      '1e400',
      '-0',
      '0.0000001',
      '9007199254740993',
    ]) {
      const parsed = parseJsonExactly(`{"value":${text}}`) as { value: unknown };
      expect(isJsonNumberText(parsed.value), text).toBe(true);
      expect(JSON.stringify(parsed)).toBe(`{"value":${text}}`);
    }
    expect(parseJsonExactly('{"plain":[72.5,0,-3,0.000001,123456789012345]}')).toEqual({
      plain: [72.5, 0, -3, 0.000001, 123456789012345],
    });
  });

  it('fails on what JSON.parse fails on', () => {
    for (const text of ['{"a":0x1A}', '{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":+1}', '{"a":NaN}', '[1e]'])
      expect(() => parseJsonExactly(text), text).toThrow(SyntaxError);
  });
});
