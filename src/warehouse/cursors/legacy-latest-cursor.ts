/**
 * `legacy:latest:<object>`: the end of the last fully loaded `last_updated` window of one legacy object
 * (how it moves: src/legacy/legacy-cursor.ts). A value without a parsable `end` reads as absent;
 * a missing `start` or `at` reads as `end`.
 */
import { z } from 'zod';
import { defineCursor } from './define-cursor.ts';

export const LEGACY_LATEST_CURSOR_PREFIX = 'legacy:latest:';

const legacyLatestValue = z
  .object({
    /** End of the last fully loaded window (ISO instant). */
    end: z.string().refine((end) => !Number.isNaN(Date.parse(end))),
    /** Start of that window. */
    start: z.string().optional().catch(undefined),
    /** When the window was loaded. */
    at: z.string().optional().catch(undefined),
  })
  .transform(({ end, start, at }) => ({ end, start: start ?? end, at: at ?? end }));
export type LegacyCursorValue = z.output<typeof legacyLatestValue>;

export const legacyLatestCursor = defineCursor(
  (object: string) => `${LEGACY_LATEST_CURSOR_PREFIX}${object}`,
  legacyLatestValue,
);
