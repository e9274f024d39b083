/**
 * One source of defaults (issue "Nothing lost…", item 6): the shipped `config/default.json` sets nothing
 * the code already defaults (src/config/schema.ts, documented in the README). A restated default drifts
 * (it once shipped `stream.staleAfterMs` 30000 and `stream.gapAfterMs` 60000 over the code's 15 s and
 * 5 minutes, which the README described) and an override hides in a file nobody reads.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';

/** Every leaf of a JSON value, as dotted paths (arrays are leaves). */
function leaves(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return prefix ? [prefix] : [];
  return Object.entries(value).flatMap(([key, inner]) => leaves(inner, prefix ? `${prefix}.${key}` : key));
}

function at(value: unknown, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], value);
}

/** The settings of `file` that the schema defaults already (a restatement or an override). */
function defaultedSettings(file: unknown): string[] {
  const defaults = configSchema.parse({});
  return leaves(file).filter((path) => at(defaults, path) !== undefined);
}

describe('config/default.json', () => {
  it('sets no setting the code defaults', () => {
    const shipped = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8'));
    expect(defaultedSettings(shipped)).toEqual([]);
  });

  it('the check finds a restated or overriding default', () => {
    expect(
      defaultedSettings({ stream: { gapAfterMs: 60_000, staleAfterMs: 15_000 }, logLevel: 'info' }),
    ).toEqual(['stream.gapAfterMs', 'stream.staleAfterMs', 'logLevel']);
    expect(defaultedSettings({ databaseUrl: 'postgres://x' })).toEqual([]);
  });
});
