/**
 * Cursors: what `validic_sync.checkpoints` holds (the table keeps its name; the word is "cursor").
 * Each kind of cursor is defined here once: how its key is spelled and the zod schema of its value.
 * Every cursor is read through its kind (`readCursor` below, `ctx.cursors.read` in a job), so its value
 * arrives parsed; a stored value the schema rejects reads as absent, as if the cursor had never been
 * written: its owner starts over from its default and its next write replaces the value. Cursors are
 * only WRITTEN by applyBatch (`cursor.write(value)` is the CursorWrite of a batch's progress), with the
 * data they cover, in one transaction.
 */

import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { CursorWrite } from '../pipeline/batch.ts';
import type { Database } from './database.ts';

/** One cursor of one org: its key, how a stored value is read, and the write that replaces it. */
export interface Cursor<Value, Input = Value> {
  readonly key: string;
  /** The stored value parsed by the kind's schema; undefined when absent or not of its shape. */
  parse(stored: unknown): Value | undefined;
  /** The progress entry that replaces this cursor with `value` (applyBatch, same transaction as its data). */
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

/**
 * Reading the named cursors of `validic_sync.checkpoints`, each through its kind (cursors/). Cursors are
 * only WRITTEN by applyBatch, in the same transaction as the data they cover, so a cursor never runs
 * ahead of committed data. `listCursors` gives the stored values as they are (for `status`).
 */
export interface CursorEntry {
  key: string;
  value: unknown;
  updatedAt: Date;
}

/** The value stored under `key`, unparsed; undefined when it was never written. */
async function readStoredValue(db: Kysely<Database>, orgId: string, key: string): Promise<unknown> {
  const row = await db
    .selectFrom('validic_sync.checkpoints')
    .select('value')
    .where('org_id', '=', orgId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row?.value;
}

/**
 * A cursor's value parsed by its kind (cursors/): undefined when it was never written or its stored
 * value is not of the kind's shape.
 */
export async function readCursor<Value>(
  db: Kysely<Database>,
  orgId: string,
  cursor: Cursor<Value, any>,
): Promise<Value | undefined> {
  return cursor.parse(await readStoredValue(db, orgId, cursor.key));
}

/** All cursors of an org (optionally those whose key starts with `prefix`), by key. */
export async function listCursors(
  db: Kysely<Database>,
  orgId: string,
  prefix?: string,
): Promise<CursorEntry[]> {
  let query = db
    .selectFrom('validic_sync.checkpoints')
    .select(['key', 'value', 'updated_at'])
    .where('org_id', '=', orgId)
    .orderBy('key');
  if (prefix) query = query.where('key', 'like', `${prefix.replace(/[\\%_]/g, '\\$&')}%`);
  const rows = await query.execute();
  return rows.map((r) => ({ key: r.key, value: r.value, updatedAt: r.updated_at }));
}

/** `users:last_full_sync`: when users.sync last read the whole user list (moves with its last page). */
export const usersFullSyncCursor = defineCursor(() => 'users:last_full_sync', z.object({ at: z.string() }));

/**
 * `reconcile:last`: what the last reconciliation of connection events saw and added. Written by each
 * connections.reconcile job outside a backfill run (its window) and by the `reconcile` command (the
 * totals of its range, replacing the windows'); `status` and `/metrics` read it.
 */
const reconcileLastValue = z.object({
  at: z.string(),
  startDate: z.string(),
  endDate: z.string(),
  /** Events the platform listed. */
  events: z.number(),
  /** Of those, events that were not in the warehouse yet (the stream missed them). */
  missed: z.number(),
});
export type ReconcileLast = z.output<typeof reconcileLastValue>;

export const reconcileLastCursor = defineCursor(() => 'reconcile:last', reconcileLastValue);

/** The write of a reconciliation's result, stamped `at`. */
export function reconcileLastWrite(value: Omit<ReconcileLast, 'at'>, at = new Date()): CursorWrite {
  return reconcileLastCursor().write({ at: at.toISOString(), ...value });
}

/**
 * `legacy:latest:<object>`: the end of the last fully loaded `last_updated` window of one legacy object
 * (how it moves: src/legacy/legacy-windows.ts). A value without a parsable `end` reads as absent;
 * a missing `start` or `at` reads as `end`.
 */
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

/**
 * `stream:checkpoint:<stream name>:<slot>`: one connection's stream cursor (StreamCursorValue, plus
 * the stream id and slot it was written by). Every connection (slot 0..2) of a stream has its own,
 * because each connection sees its own disconnects: a shared cursor would let a live connection erase
 * the gap another one just opened. A field of the wrong type reads as absent; the others are kept.
 */

/**
 * The consumer's cursor, stored by the caller as one JSON value in the same transaction as the frames
 * it comes with. All times are ISO-8601 strings.
 */
export interface StreamCursorValue {
  /** Newest `created_at` among the data frames committed so far (stream or replay). */
  newestCreatedAt?: string;
  /** Last time a frame (data or poke) arrived on the main stream: "we were connected until here". */
  lastLiveAt?: string;
  /**
   * Start T of an open gap: when the main stream was last heard from before it dropped (or stopped).
   * Absent while the main stream is live. At start-up, `lastDisconnectAt ?? lastLiveAt` is the gap start.
   */
  lastDisconnectAt?: string;
  /**
   * The platform's clock minus ours (ms) when the times above were written, from the last poke's `ts`:
   * it turns `lastDisconnectAt` into platform time after a restart (STATE-MACHINE.md, "Which clock T is on").
   */
  platformOffsetMs?: number;
  /**
   * The last disconnect was unclean (a drop, a stale connection, a failed commit, a stop while data
   * flowed): what may have been lost with it. Written with the disconnect, cleared once the stream is
   * live again; a start-up that finds it reports it again (reporting a gap is idempotent).
   */
  uncleanEnd?: StreamGap;
  /**
   * Platform time of the last poke that found nothing of this connection uncommitted: the platform pokes
   * when nothing else flows, so everything it had sent this connection before then is committed. With
   * `newestCreatedAt`, where what an unclean end may lose begins (the later of the two).
   */
  quietAt?: string;
  /**
   * Platform time from which the stream delivers to this connection, for a connection that has
   * committed nothing yet: where what a crash before its first commit may have lost begins (the
   * stream's backlog start for a new stream, or what the org's other connections had committed).
   */
  deliveryFrom?: string;
  /**
   * Platform time this connection first started (kept from then on): events created before it were not
   * this stream's to deliver as far as loss is counted (a new stream's backlog may start at its creation).
   */
  connectedSince?: string;
}

/**
 * A span of platform time (`created_at`) in which events may be missing from the warehouse, and why.
 * Every gap is left to the reconciliation stream, which re-delivers everything created since its last
 * pass; the org's stream decides what else it needs (src/stream/README.md, "Gaps").
 *
 * Unclean ends of the primary stream (the platform's checkpoint moved with what it SENT, so whatever was
 * in flight or held uncommitted is gone from that stream): [newest committed `created_at`, the moment
 * reading stopped], both on the platform's clock.
 * - `crash`: the process died while the stream was live (found at the next start-up).
 * - `dropped`: the server or the network ended the connection.
 * - `stale`: no frame for `staleAfterMs`; the platform may have been sending into a dead connection.
 * - `commit-failed`: commits kept failing; the connection was closed to stop reading.
 * - `stopped`: stopped (Ctrl-C, SIGTERM, a lost slot) while data was flowing.
 *
 * Replays that could not fill their gap:
 * - `beyond-replay`: older than replay serves (`replayMaxDays`); the consumer replays from the earliest
 *   allowed date.
 * - `stream-checkpoint-expired`: longer than the platform keeps the stream checkpoint
 *   (`checkpointRetentionDays`); the consumer replays up to the present instead of up to T.
 * - `replay-timed-out`: no hand-off within `replayTimeoutMs`.
 * - `replay-unavailable`: the replay endpoint refused or failed `replayAttempts` times in a row.
 * - `replay-quiet`: the replay sent everything it had (`quietPokes` pokes at or after T) without an
 *   event created at or after T: a quiet organization, where the hand-off never comes.
 */
export interface StreamGap {
  /** ISO start (platform clock). */
  from: string;
  /** ISO end (platform clock). */
  to: string;
  reason: StreamGapReason;
}

export const UNCLEAN_END_REASONS = ['crash', 'dropped', 'stale', 'commit-failed', 'stopped'] as const;
/**
 * Unclean ends of a delivery (a pass of the reconciliation stream, or a replay of gaps): what it had been
 * sent and not committed is gone from the reconciliation stream too, so the gap
 * [what it had committed, when it stopped reading] needs the replay. `pass-crash` is found by a later
 * run (its process is gone).
 */
export const PASS_END_REASONS = [
  'pass-crash',
  'pass-dropped',
  'pass-stale',
  'pass-stopped',
  'pass-timed-out',
  'pass-failed',
  'pass-commit-failed',
] as const;
export const REPLAY_GAP_REASONS = [
  'beyond-replay',
  'stream-checkpoint-expired',
  'replay-unavailable',
  'replay-timed-out',
  'replay-quiet',
] as const;
export type UncleanEndReason = (typeof UNCLEAN_END_REASONS)[number];
export type PassEndReason = (typeof PASS_END_REASONS)[number];
export type StreamGapReason = UncleanEndReason | PassEndReason | (typeof REPLAY_GAP_REASONS)[number];

/**
 * Key prefix of every stream connection's cursor. The stored keys keep the value they were first written
 * with (`stream:checkpoint:`), so existing warehouses read on; the word for what we store is "cursor".
 */
export const STREAM_CURSOR_KEY_PREFIX = 'stream:checkpoint:';

/** Key prefix of the per-connection cursors of one stream name (for `status`). */
export function streamCursorKeyPrefix(streamName: string): string {
  return `${STREAM_CURSOR_KEY_PREFIX}${streamName}:`;
}

const optional = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);

const streamCursorSchema = z.object({
  newestCreatedAt: optional(z.string()),
  lastLiveAt: optional(z.string()),
  lastDisconnectAt: optional(z.string()),
  platformOffsetMs: optional(z.number()),
  uncleanEnd: optional(
    z.object({
      from: z.string(),
      to: z.string(),
      reason: z.enum([...UNCLEAN_END_REASONS, ...PASS_END_REASONS, ...REPLAY_GAP_REASONS]),
    }),
  ),
  quietAt: optional(z.string()),
  deliveryFrom: optional(z.string()),
  connectedSince: optional(z.string()),
  streamId: optional(z.string()),
  slot: optional(z.number()),
}) satisfies z.ZodType<StreamCursorValue>;

export const streamCursor = defineCursor(
  (streamName: string, slot: number) => `${streamCursorKeyPrefix(streamName)}${slot}`,
  streamCursorSchema,
);
