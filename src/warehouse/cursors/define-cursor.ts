/**
 * A kind of cursor in `validic_sync.checkpoints`: how its key is spelled and the zod schema of its value.
 * Every cursor is read through its kind (`readCursor` in ../checkpoints.ts, `ctx.cursors.read` in a job),
 * so its value arrives parsed. A stored value the schema rejects reads as absent, as if the cursor had
 * never been written: its owner starts over from its default and its next write replaces the value.
 * Cursors are only WRITTEN by applyBatch (`cursor.write(value)` is the CursorWrite of a checkpoint).
 */
import type { z } from 'zod';
import type { CursorWrite } from '../../pipeline/batch.ts';

/** One cursor of one org: its key, how a stored value is read, and the write that replaces it. */
export interface Cursor<Value, Input = Value> {
  readonly key: string;
  /** The stored value parsed by the kind's schema; undefined when absent or not of its shape. */
  parse(stored: unknown): Value | undefined;
  /** The checkpoint entry that replaces this cursor with `value` (applyBatch, same transaction as its data). */
  write(value: Input): CursorWrite;
}

/** A cursor kind: `key(...args)` names one cursor of it, `schema` checks its value. */
export function defineCursor<Args extends unknown[], Schema extends z.ZodType>(
  key: (...args: Args) => string,
  schema: Schema,
): (...args: Args) => Cursor<z.output<Schema>, z.input<Schema>> {
  return (...args) => {
    const name = key(...args);
    return {
      key: name,
      parse(stored) {
        if (stored === undefined || stored === null) return undefined;
        const parsed = schema.safeParse(stored);
        return parsed.success ? parsed.data : undefined;
      },
      write: (value) => ({ key: name, value }),
    };
  };
}
