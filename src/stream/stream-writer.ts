/**
 * What one stream connection writes, end to end: its committed frames as the loader's items, normalized
 * while the previous write is still landing, then written one at a time with the connection's cursor in
 * the same transaction (the pipelined commit, below). The frame's path to its row (README.md, "How a frame
 * becomes a row") passes through this file once.
 *
 * Why pipelined: `StreamConsumer` awaits `commit` before it reads on. Without pipelining it would stop
 * reading for every transaction; frames would wait unread during the commit, and their `receivedAt` would
 * be stamped only after it, so the time rule (`maxWaitMs`) would start late too. Here `commit` first waits
 * for the PREVIOUS write to land, then starts this one and returns. At most one batch is being written and
 * one is filling, so memory stays bounded.
 *
 * Safety is unchanged. Writes run one after another in order, and each carries its own cursor in the same
 * transaction, so a cursor never moves past data that is not committed. A write that fails is not kept or
 * retried here: the next `commit` (or `drain`) rejects with `EarlierWriteFailed`, which carries the failed
 * write's frames, and starts nothing. The consumer's machine is then the one owner of everything that did
 * not land: it holds those frames with the batch it was committing, stops reading, and retries them with
 * back-off until they land (STATE-MACHINE.md, "Commits"). A crash can lose only frames held in memory
 * whose cursor never moved; the reconciliation re-delivers them.
 */
import type { Logger } from '../log/logger.ts';
import type { LoadResult, RawItem } from '../pipeline/batch.ts';
import type { Cursor, StreamCursorValue } from '../warehouse/cursors.ts';
import { applyPreparedBatch, prepareBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import type { CommitMeta, DataFrame } from './types.ts';

/**
 * Maps committed stream/replay items onto the loader's batch items (src/pipeline/batch.ts): a data
 * frame's payload is a `frame` (routed by shape: record of any type or connection event), a bad frame
 * goes to quarantine as `unparseable` with its reason.
 */
export function toRawItems(frames: DataFrame[]): RawItem[] {
  return frames.map((frame) =>
    frame.kind === 'data'
      ? { kind: 'frame', raw: frame.payload }
      : { kind: 'unparseable', text: frame.text, reason: frame.reason },
  );
}

export interface StreamWriterOptions {
  warehouse: Warehouse;
  orgId: string;
  /** The connection's cursor; `extra` fields (stream id, slot) are stored beside it for `status`. */
  cursor: Cursor<StreamCursorValue, any>;
  extra: Record<string, unknown>;
  log: Logger;
  now: () => number;
  /** After each write landed (counts, hooks, metrics). */
  onWritten(event: {
    frames: DataFrame[];
    meta: CommitMeta;
    result: LoadResult;
    startedAt: number;
    committedAt: number;
  }): void;
}

/** One connection's writer: `commit` is the consumer's `commit` dependency. */
export function createStreamWriter(
  options: StreamWriterOptions,
): PipelinedWriter<[DataFrame[], StreamCursorValue, CommitMeta]> {
  const { warehouse, orgId, cursor, log, now } = options;
  const pipeline = pipelineWrites(
    async (
      prepared: Awaited<ReturnType<typeof prepareBatch>>,
      frames: DataFrame[],
      cursorValue: StreamCursorValue,
      meta: CommitMeta,
    ) => {
      const startedAt = now();
      const result = await applyPreparedBatch(
        warehouse,
        prepared,
        { cursors: [cursor.write({ ...cursorValue, ...options.extra })] },
        { log },
      );
      options.onWritten({ frames, meta, result, startedAt, committedAt: now() });
    },
    (_prepared, frames) => frames,
    // A held batch's retry decides whether the consumer reads on (`holding` → resume): it must have
    // landed, not merely started, or reading would resume on a write that may still fail (a database
    // outage then let the primary read on, its frames failing one write after another).
    (_prepared, _frames, _cursorValue, meta) => meta.reason === 'retry',
  );
  return {
    // Normalized here, before the pipeline waits for the previous write: the two overlap (its COPY text too).
    commit: async (frames, cursorValue, meta) =>
      pipeline.commit(
        await prepareBatch({ orgId, arrivedVia: meta.via, items: toRawItems(frames) }, { encodeAhead: true }),
        frames,
        cursorValue,
        meta,
      ),
    drain: () => pipeline.drain(),
    busy: () => pipeline.busy(),
  };
}

/** A write handed over earlier failed: its frames, and why. */
export class EarlierWriteFailed extends Error {
  readonly frames: DataFrame[];
  override readonly cause: unknown;

  constructor(frames: DataFrame[], cause: unknown) {
    super(`an earlier stream write failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'EarlierWriteFailed';
    this.frames = frames;
    this.cause = cause;
  }
}

export interface PipelinedWriter<Args extends unknown[]> {
  /**
   * Resolves once the previous write has landed and this one has started (or, for a write `mustLand`
   * marks, has landed); rejects with `EarlierWriteFailed` (and starts nothing) if the previous write
   * failed, or with this write's own error (not wrapped: the caller still holds its frames) if it must land.
   */
  commit(...args: Args): Promise<void>;
  /** Resolves when every started write has landed; rejects with `EarlierWriteFailed` if one failed. */
  drain(): Promise<void>;
  /** True while a write is in flight: something is not committed yet. */
  busy(): boolean;
}

/**
 * `framesOf` tells which frames a write's arguments carry (what the consumer must hold if it fails).
 * `mustLand` marks writes whose `commit` waits until they have landed, and rejects with their own failure.
 */
export function pipelineWrites<Args extends unknown[]>(
  write: (...args: Args) => Promise<void>,
  framesOf: (...args: Args) => DataFrame[],
  mustLand: (...args: Args) => boolean = () => false,
): PipelinedWriter<Args> {
  // Settles when the write in flight has landed or failed; never rejects.
  let inFlight: Promise<void> | undefined;
  let writing = false;
  let failed: EarlierWriteFailed | undefined;

  const settle = async (): Promise<void> => {
    if (inFlight) await inFlight;
    inFlight = undefined;
    const failure = failed;
    failed = undefined;
    if (failure) throw failure;
  };

  return {
    async commit(...args: Args): Promise<void> {
      await settle();
      writing = true;
      inFlight = (async () => {
        try {
          await write(...args);
        } catch (error) {
          failed = new EarlierWriteFailed(framesOf(...args), error);
        } finally {
          writing = false;
        }
      })();
      if (mustLand(...args)) {
        // Its own failure is thrown as itself: the caller still holds these frames (they are not earlier).
        await settle().catch((error: EarlierWriteFailed) => {
          throw error.cause;
        });
      }
    },
    drain: settle,
    busy: () => writing || failed !== undefined,
  };
}
