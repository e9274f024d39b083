/**
 * One organization's stream, end to end: find the configured stream by name (or create it, with the
 * optional resource filter), then keep 1..3 connections to it, each a `StreamConsumer` (src/stream) whose
 * commits go through the loader with the connection's checkpoint in the SAME transaction as the data.
 *
 * - Each connection has its own cursor (`stream:checkpoint:<name>:<slot>`, `streamCheckpointCursor` in src/warehouse/cursors/),
 *   so one connection's disconnect (its gap) is never erased by another connection's commits.
 * - Under the worker, `acquireSlot` hands out fleet-wide lock slots (at most 3 per stream, the
 *   platform's limit); the slot number names the cursor, so two processes never share one.
 * - Gaps the consumer cannot fill (beyond replay, replay refused) are recorded in `stream:gaps` and a
 *   `records.backfill` job is enqueued for them through the injected `enqueue`.
 * - Hooks expose state changes, commits and gaps so the worker can attach its metrics.
 * See README.md next to this file.
 */

import { httpStatusOf, UserFacingError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { emptyCounts, type LoadResult } from '../pipeline/batch.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import type { OrgClients } from '../runtime/org-clients.ts';
import type { Clock } from '../time/clock.ts';
import { MAX_STREAM_CONNECTIONS } from '../validic/platform-limits.ts';
import type { StreamInfo } from '../validic/streams-client.ts';
import { readCursor } from '../warehouse/checkpoints.ts';
import { streamCheckpointCursor } from '../warehouse/cursors/stream-checkpoint-cursor.ts';
import type { RecordedGap } from '../warehouse/cursors/stream-gaps-cursor.ts';
import { applyPreparedBatch, type PreparedBatch, prepareBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import { type AcquireSlot, runOnSlots } from './connection-slots.ts';
import { eagerBody } from './eager-body.ts';
import { pipelineWrites } from './pipelined-commit.ts';
import { recordStreamGap } from './record-stream-gap.ts';
import { reportConnect422 } from './report-connect-422.ts';
import type { StreamConsumerOptionsInput } from './resolve-consumer-options.ts';
import { StreamConsumer } from './stream-consumer.ts';
import { emptyStreamCounters } from './stream-counters.ts';
import { addLoadCounts, addStreamCounters, type OrgStreamSummary } from './stream-summary.ts';
import { toRawItems } from './to-raw-items.ts';
import type { CommitMeta, DataFrame, GapTooLong, StreamCheckpoint, StreamState } from './types.ts';

/** A commit as seen by metrics: `committedAt − frame.createdAt` is the lag, `− frame.receivedAt` the latency. */
export interface StreamCommitEvent {
  slot: number;
  via: CommitMeta['via'];
  reason: CommitMeta['reason'];
  frames: readonly DataFrame[];
  result: LoadResult;
  /** Clock time (ms) when the transaction committed. */
  committedAt: number;
  /** How long applyBatch took, ms. */
  durationMs: number;
}

export interface OrgStreamHooks {
  onStateChange?(event: { slot: number; from: StreamState; to: StreamState; reason: string }): void;
  onCommit?(event: StreamCommitEvent): void;
  onGap?(event: { slot: number; gap: GapTooLong; backfill: RecordedGap['backfill'] }): void;
}

/** Queues a REST backfill of whole UTC days `from..to` (inclusive); the CLI runs it inline, the worker in BullMQ. */
export type EnqueueJob = (
  name: 'records.backfill',
  payload: { orgId: string; from: string; to: string },
) => Promise<boolean> | boolean;

export interface OrgStreamOptions {
  warehouse: Warehouse;
  /** The org's clients (`runtime.org(orgId)`): streams client, HTTP client, org config. */
  org: Pick<OrgClients, 'config' | 'http' | 'streams'>;
  /** Stops every connection (each flushes its micro-batch and commits its checkpoint first). */
  signal: AbortSignal;
  consumerOptions?: StreamConsumerOptionsInput;
  /** Connections to open, 1..3. Default: the org's `stream.connections`. */
  connections?: number;
  acquireSlot?: AcquireSlot;
  /** Without it, gaps are recorded as `planned` and the log says to run `backfill` for them. */
  enqueue?: EnqueueJob;
  hooks?: OrgStreamHooks;
  log?: Logger;
  clock?: Clock;
  random?: () => number;
}

export interface OrgStreamHandle {
  stream: StreamInfo;
  /** Resolves when every connection stopped (after `signal` aborted); rejects on a permanent error. */
  done: Promise<OrgStreamSummary>;
  /** The running totals. */
  summary(): OrgStreamSummary;
  /** Clock time (ms) of the last commit that carried a data frame (start time until then). */
  lastDataAt(): number;
  /**
   * How long every connection has been idle (ms, the least of them; 0 if any is not): live, pokes
   * arriving, no data, nothing waiting to commit (src/stream/STATE-MACHINE.md, "Idle").
   */
  quietForMs(): number;
  /** Current state of each connection, by slot. */
  states(): Record<number, StreamState>;
}

/** Finds or creates the org's stream and starts its connections. */
export async function startOrgStream(options: OrgStreamOptions): Promise<OrgStreamHandle> {
  const { warehouse, org, signal } = options;
  const orgId = org.config.orgId;
  const settings = org.config.stream;
  const log = (options.log ?? silentLogger).child({ orgId, stream: settings.name });
  const now = () => options.clock?.now() ?? Date.now();
  const connections = Math.min(
    MAX_STREAM_CONNECTIONS,
    Math.max(1, Math.floor(options.connections ?? settings.connections)),
  );
  const resources = settings.resources && settings.resources.length > 0 ? settings.resources : undefined;

  let stream: StreamInfo;
  try {
    stream = await org.streams.findOrCreateStream({
      name: settings.name,
      ...(resources ? { resources } : {}),
      signal,
    });
  } catch (error) {
    const status = httpStatusOf(error);
    if (status === 401 || status === 403) {
      throw new UserFacingError(`the streams API refused the token of organization ${orgId} (${status})`, {
        fix: 'check VALIDIC_TOKEN (or the org token in the config file) and VALIDIC_STREAMS_URL',
        cause: error,
      });
    }
    throw error;
  }
  log.info({ streamId: stream.id, connections }, 'stream found');

  // Stops the sibling connections when one fails for good (401/403, a commit that keeps failing).
  const failed = new AbortController();
  const runSignal = AbortSignal.any([signal, failed.signal]);
  const finished = { counters: emptyStreamCounters() };
  const records = emptyCounts();
  const live = new Map<number, StreamConsumer>();
  const writers = new Map<number, { busy(): boolean }>();
  const states: Record<number, StreamState> = {};
  let gaps = 0;
  let backfillsEnqueued = 0;
  let lastDataAt = now();

  const summary = (): OrgStreamSummary => {
    let counters = finished.counters;
    for (const consumer of live.values()) counters = addStreamCounters(counters, consumer.counters());
    return {
      orgId,
      streamId: stream.id,
      streamName: settings.name,
      connections,
      counters,
      records: { ...records },
      gaps,
      backfillsEnqueued,
    };
  };

  const onGap = async (slot: number, gap: GapTooLong): Promise<void> => {
    // Errors here must not stop the stream: live data matters more than the bookkeeping of a gap.
    try {
      const from = gap.from.slice(0, 10);
      const to = gap.to.slice(0, 10);
      let backfill: RecordedGap['backfill'] = 'not-needed';
      if (gap.reason === 'stream-checkpoint-expired') {
        log.warn(
          { slot, ...gap },
          'stream gap longer than the platform keeps the stream checkpoint: replay runs up to now to cover it',
        );
      } else if (options.enqueue) {
        backfill = 'enqueued';
        if (await options.enqueue('records.backfill', { orgId, from, to })) backfillsEnqueued += 1;
        log.warn(
          { slot, ...gap },
          `stream gap the replay cannot fill: REST backfill windows planned for ${from}..${to}`,
        );
      } else {
        backfill = 'planned';
        log.warn(
          { slot, ...gap },
          `stream gap the replay cannot fill: REST backfill needed, run \`validic-sync backfill --from ${from} --to ${to}\``,
        );
      }
      gaps += 1;
      await recordStreamGap(warehouse, orgId, {
        ...gap,
        streamName: settings.name,
        slot,
        recordedAt: new Date(now()).toISOString(),
        backfill,
      });
      options.hooks?.onGap?.({ slot, gap, backfill });
    } catch (error) {
      log.error(
        { err: error, slot, gap },
        'could not record a stream gap; plan a REST backfill for it by hand',
      );
    }
  };

  /** One connection on `slot` until `stop` aborts (it flushes and commits first) or a permanent error. */
  const runSlot = async (slot: number, stop: AbortSignal): Promise<void> => {
    const cursor = streamCheckpointCursor(settings.name, slot);
    const consumerLog = log.child({ slot });
    const writeBatch = async (
      prepared: PreparedBatch,
      frames: DataFrame[],
      checkpoint: StreamCheckpoint,
      meta: CommitMeta,
    ) => {
      const started = now();
      const result = await applyPreparedBatch(
        warehouse,
        prepared,
        // Extra fields (stream id, slot) are for `status`; loadCheckpoint's reader ignores them.
        { cursors: [cursor.write({ ...checkpoint, streamId: stream.id, slot })] },
        { log: consumerLog },
      );
      const committedAt = now();
      addLoadCounts(records, result);
      if (frames.some((f) => f.kind === 'data')) lastDataAt = committedAt;
      options.hooks?.onCommit?.({
        slot,
        via: meta.via,
        reason: meta.reason,
        frames,
        result,
        committedAt,
        durationMs: committedAt - started,
      });
    };
    // The consumer reads the next batch while this one is written (see pipelined-commit.ts).
    const writer = pipelineWrites(writeBatch, { log: consumerLog });
    const consumer = new StreamConsumer(
      {
        openStream: async (s) => {
          try {
            const res = await org.http.openEventStream(org.streams.connectUrl(stream.id), {
              budgetKey: org.config.token,
              signal: s,
            });
            return { body: eagerBody(res.body) };
          } catch (error) {
            reportConnect422(error, stream.name, consumerLog);
            throw error;
          }
        },
        openReplay: async (date, s) => {
          const url = org.streams.replayUrl({ date, ...(resources ? { resources } : {}) });
          const res = await org.http.openEventStream(url, { budgetKey: org.config.token, signal: s });
          return { body: eagerBody(res.body) };
        },
        // Normalized here, before the writer waits for the previous write: the two overlap.
        commit: async (frames, checkpoint, meta) =>
          writer.commit(
            await prepareBatch(
              { orgId, arrivedVia: meta.via, items: toRawItems(frames) },
              // The next batch is prepared while this one is written: its COPY text too.
              { encodeAhead: true },
            ),
            frames,
            checkpoint,
            meta,
          ),
        loadCheckpoint: async () => (await readCursor(warehouse.db, orgId, cursor)) ?? null,
        onGapTooLong: (gap) => onGap(slot, gap),
        onStateChange: (from, to, reason) => {
          states[slot] = to;
          options.hooks?.onStateChange?.({ slot, from, to, reason });
        },
        log: consumerLog,
        ...(options.clock ? { clock: options.clock } : {}),
        ...(options.random ? { random: options.random } : {}),
      },
      options.consumerOptions,
    );
    live.set(slot, consumer);
    writers.set(slot, writer);
    try {
      await consumer.run(stop);
      // Stopped: the last micro-batch and checkpoint were handed over; wait until they have landed.
      await writer.drain();
    } catch (error) {
      await writer.drain().catch(() => {});
      throw error;
    } finally {
      live.delete(slot);
      writers.delete(slot);
      finished.counters = addStreamCounters(finished.counters, consumer.counters());
    }
  };

  /** Connection `index`: take a slot, run until stopped; if the slot's lock is lost, take one again. */
  const runConnection = (index: number): Promise<void> =>
    options.acquireSlot
      ? runOnSlots(index, options.acquireSlot, runSignal, runSlot, log)
      : runSlot(index, runSignal);

  const done = (async () => {
    const results = await Promise.allSettled(
      Array.from({ length: connections }, (_, i) =>
        runConnection(i).catch((error: unknown) => {
          failed.abort(error);
          throw error;
        }),
      ),
    );
    const failure = results.find((r) => r.status === 'rejected');
    if (failure) {
      log.error({ err: failure.reason }, `stream stopped: ${redactedMessage(failure.reason)}`);
      const status = httpStatusOf(failure.reason);
      if (status === 401 || status === 403) {
        throw new UserFacingError(`the stream refused the token of organization ${orgId} (${status})`, {
          fix: 'check VALIDIC_TOKEN (or the org token in the config file); the stream stopped',
          cause: failure.reason,
        });
      }
      throw failure.reason;
    }
    return summary();
  })();
  // The caller may only look at `done` later; an early rejection must not count as unhandled.
  done.catch(() => {});

  return {
    stream,
    done,
    summary,
    lastDataAt: () => lastDataAt,
    quietForMs: () => {
      // A connection still waiting for its slot (or between slots) is not idle either.
      if (live.size < connections) return 0;
      let least = Infinity;
      for (const [slot, consumer] of live) {
        if (writers.get(slot)?.busy()) return 0;
        least = Math.min(least, consumer.quietForMs());
      }
      return least;
    },
    states: () => ({ ...states }),
  };
}

/** Finds or creates the stream, runs it until `signal` aborts, and returns what it did. */
export async function runOrgStream(options: OrgStreamOptions): Promise<OrgStreamSummary> {
  return (await startOrgStream(options)).done;
}
