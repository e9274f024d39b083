/**
 * One organization's stream, end to end: find the configured stream by name (or create it, with the
 * optional resource filter) and its reconciliation stream, then keep 1..3 connections to the primary,
 * each a `StreamConsumer` (src/stream) whose commits go through the loader with the connection's
 * cursor in the SAME transaction as the data.
 *
 * - Each connection has its own cursor (`stream:checkpoint:<name>:<slot>`, `streamCursor` in src/warehouse/cursors.ts),
 *   so one connection's disconnect (its gap) is never erased by another connection's commits.
 * - Under the worker, `acquireSlot` hands out fleet-wide lock slots (at most 3 per stream, the
 *   platform's limit); the slot number names the cursor, so two processes never share one.
 * - Gaps (unclean ends, replays that could not fill theirs) are recorded in `validic_sync.stream_gaps`
 *   and left to the reconciliation stream (`requestPass` brings its next pass forward); what it cannot
 *   reach any more gets one `records.backfill` of the gap's days through the injected `enqueue`.
 * - One replay at a time per organization (per process): the other connections leave their gaps to it.
 * - Hooks expose state changes, commits and gaps so the worker can attach its metrics.
 * See README.md next to this file.
 */
import type { OrganizationConfig } from '../config/schema.ts';
import { httpStatusOf, UserFacingError } from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { emptyCounts, type LoadResult } from '../pipeline/batch.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import type { Clock } from '../time/clock.ts';
import { MAX_STREAM_CONNECTIONS, STREAM_CHECKPOINT_RETENTION_DAYS } from '../validic/platform-limits.ts';
import type { StreamInfo, StreamsClient } from '../validic/streams-client.ts';
import { readCursor, type StreamGap, streamCursor } from '../warehouse/cursors.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import {
  type GapHandledBy,
  isStreamGapOpen,
  readLastReconcilePass,
  readOpenStreamGaps,
  readPrimaryCursors,
  recordStreamGap,
} from '../warehouse/stream-bookkeeping.ts';
import { committedThroughOf, utcDate } from './consumer-cursor.ts';
import { emptyStreamCounters } from './consumer-machine.ts';
import type { StreamConsumerOptionsInput } from './consumer-options.ts';
import { gapFiller, splitAtReplayReach } from './gap-delivery.ts';
import { closeDeadDeliveries } from './interrupted-deliveries.ts';
import type { EnqueueGapBackfill } from './reconcile-org.ts';
import {
  findReconcileStream,
  nextStreamCoverFrom,
  type ReconcileStreamLookup,
  streamCreatedAt,
} from './reconciliation.ts';
import { reportConnect422 } from './report-connect-422.ts';
import { openSse } from './sse-reader.ts';
import { StreamConsumer } from './stream-consumer.ts';
import { addLoadCounts, addStreamCounters, type OrgStreamSummary } from './stream-summary.ts';
import { createStreamWriter } from './stream-writer.ts';
import type { CommitMeta, DataFrame, ReplayClaim, StreamState } from './types.ts';

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
  onGap?(event: { slot: number; gap: StreamGap; handledBy: GapHandledBy }): void;
}

export interface OrgStreamOptions {
  warehouse: Warehouse;
  /** The org's clients (`runtime.org(orgId)`): streams client, HTTP client, org config. */
  org: { config: OrganizationConfig; http: HttpClient; streams: StreamsClient };
  /** Stops every connection (each flushes its micro-batch and commits its cursor first). */
  signal: AbortSignal;
  consumerOptions?: StreamConsumerOptionsInput;
  /** Connections to open, 1..3. Default: the org's `stream.connections`. */
  connections?: number;
  acquireSlot?: AcquireSlot;
  /**
   * For gap days older than the replay serves (30 days). Without it, they are recorded as `planned` and
   * the log says to run `backfill` for them.
   */
  enqueue?: EnqueueGapBackfill;
  /**
   * Asks for a reconciliation soon (reconcile-org.ts: a replay of the gaps the reconciliation stream
   * cannot reach, then a pass of it): a gap is open. The CLI runs one in process, the worker queues
   * `streams.reconcile`. Without it, the next scheduled reconciliation covers the gap.
   */
  requestPass?: () => void;
  /** Find or create the reconciliation stream (`stream.reconcile`). Default: the org's setting. */
  reconcile?: boolean;
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
  /** The reconciliation stream (found or created at start), or why there is none; undefined when off. */
  reconcile: ReconcileStreamLookup | undefined;
  /** Every connection is live and has been poked since its last data: the stream has caught up. */
  caughtUp(): boolean;
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
  const reconcile =
    (options.reconcile ?? settings.reconcile) ? await findReconcileStream(org, signal, log) : undefined;
  if (reconcile?.ok) log.info({ reconcileStreamId: reconcile.stream.id }, 'reconciliation stream found');

  // Stops the sibling connections when one fails for good (401/403, a commit that fails permanently).
  const failed = new AbortController();
  const runSignal = AbortSignal.any([signal, failed.signal]);
  const finished = { counters: emptyStreamCounters() };
  const records = emptyCounts();
  const live = new Map<number, StreamConsumer>();
  // The platform's clock: what a live connection's pokes say, else what the last run stored.
  const storedOffsetMs = (await readCursor(warehouse.db, orgId, streamCursor(settings.name, 0)))
    ?.platformOffsetMs;
  const platformNow = (): number => {
    for (const consumer of live.values()) {
      const offset = consumer.platformOffsetMs();
      if (offset !== undefined) return now() + offset;
    }
    return now() + (storedOffsetMs ?? 0);
  };
  // Gaps left open by an earlier run (a delivery cut by the death of its process is found now, and leaves
  // one too) are delivered again soon, not at the next scheduled reconciliation.
  await closeDeadDeliveries(warehouse, orgId, platformNow(), log);
  if ((await readOpenStreamGaps(warehouse.db, orgId, 1)).open > 0) options.requestPass?.();

  /**
   * Where the stream's delivery to a connection that has committed nothing begins (platform time): what
   * the org's other connections have committed (the platform deals events in order, so a newcomer gets
   * what they have not been sent), else the stream's backlog start. Whether a new stream's backlog starts
   * at its creation or at midnight (UTC) of its start date is not documented: the earlier of the two.
   */
  const deliveryStart = async (slot: number): Promise<string> => {
    let least: number | undefined;
    for (const other of await readPrimaryCursors(warehouse.db, orgId, settings.name)) {
      const heard = Date.parse(other.lastLiveAt ?? '');
      if (other.slot === slot || !(now() - heard < STREAM_CHECKPOINT_RETENTION_DAYS * 86_400_000)) continue;
      const through = committedThroughOf(other);
      if (through !== undefined && (least === undefined || through < least)) least = through;
    }
    if (least !== undefined) return new Date(least).toISOString();
    const created = Date.parse(streamCreatedAt(stream) ?? new Date(platformNow()).toISOString());
    const startDate =
      typeof stream.start_date === 'string' ? Date.parse(stream.start_date.slice(0, 10)) : NaN;
    const backlog = Math.min(Date.parse(utcDate(created)), Number.isNaN(startDate) ? Infinity : startDate);
    return new Date(backlog).toISOString();
  };
  const writers = new Map<number, { busy(): boolean }>();
  const states: Record<number, StreamState> = {};
  let gaps = 0;
  let backfillsEnqueued = 0;
  let lastDataAt = now();
  /** Gaps whose recording failed (the database was away): recorded again after the next commit. */
  let unrecorded: { slot: number; gap: StreamGap }[] = [];

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

  /**
   * Where the reconciliation stream's next pass re-delivers from without a break (platform ms);
   * undefined: no reconciliation stream (its gaps go to the replay).
   */
  const reconcileCoverFrom = async (): Promise<number | undefined> => {
    if (!reconcile?.ok) return undefined;
    const last = await readLastReconcilePass(warehouse.db, orgId, reconcile.name);
    return nextStreamCoverFrom(last, reconcile.stream, platformNow()).coverFromMs;
  };

  /**
   * Records one part of a gap, and asks for the reconciliation that delivers it again (also when the same
   * gap was recorded before and is still open: a start-up that finds a crash again, say).
   */
  const recordGap = async (slot: number, gap: StreamGap, handledBy: GapHandledBy): Promise<void> => {
    const recorded = await recordStreamGap(warehouse.db, {
      orgId,
      streamName: settings.name,
      slot,
      from: gap.from,
      to: gap.to,
      reason: gap.reason,
      handledBy,
    });
    if (recorded.created) {
      gaps += 1;
      options.hooks?.onGap?.({ slot, gap, handledBy });
    } else if (!(await isStreamGapOpen(warehouse.db, recorded.id))) {
      return;
    }
    const from = gap.from.slice(0, 10);
    const to = gap.to.slice(0, 10);
    if (handledBy === 'reconcile' || handledBy === 'replay') {
      options.requestPass?.();
    } else if (handledBy === 'rest') {
      if (!recorded.created) return;
      if (await options.enqueue!('records.backfill', { orgId, from, to, gapId: recorded.id }))
        backfillsEnqueued += 1;
      log.warn(
        { slot, ...gap },
        `stream gap older than the replay serves: REST backfill windows planned for ${from}..${to}`,
      );
    } else if (recorded.created) {
      log.warn(
        { slot, ...gap },
        `stream gap older than the replay serves: REST backfill needed, run \`validic-sync backfill --from ${from} --to ${to}\``,
      );
    }
  };

  /**
   * Records a gap and hands it to whoever can deliver it again: the reconciliation stream's next pass
   * when it re-delivers from at or before the gap's start, else the replay (reconcile-org.ts), and REST
   * for the part older than the replay serves. Never throws: live data matters more.
   */
  const onGap = async (slot: number, gap: StreamGap): Promise<void> => {
    if (gap.reason === 'stream-checkpoint-expired') {
      // The replay runs up to the present instead of up to T: it covers the gap itself.
      log.warn(
        { slot, ...gap },
        'stream gap longer than the platform keeps the stream checkpoint: replay runs up to now to cover it',
      );
      return;
    }
    try {
      const parts = splitAtReplayReach(gap, platformNow());
      if (parts.beyondReplay) await recordGap(slot, parts.beyondReplay, options.enqueue ? 'rest' : 'planned');
      if (parts.withinReplay)
        await recordGap(slot, parts.withinReplay, gapFiller(parts.withinReplay, await reconcileCoverFrom()));
    } catch (error) {
      if (unrecorded.length < 1000) unrecorded.push({ slot, gap });
      log.warn(
        { err: error, slot, gap },
        'could not record a stream gap yet; trying again after the next commit',
      );
    }
  };

  const recordPendingGaps = async (): Promise<void> => {
    if (unrecorded.length === 0) return;
    const pending = unrecorded;
    unrecorded = [];
    for (const { slot, gap } of pending) await onGap(slot, gap);
  };

  // One replay at a time in this process: an org's connections all see the same outage, and one replay
  // re-delivers it for all of them (dealt to whichever connection is live, then deduped).
  let replayHolder: number | undefined;
  const claimReplay = (slot: number): ReplayClaim => {
    if (replayHolder !== undefined && replayHolder !== slot) return { granted: false };
    replayHolder = slot;
    // Replayed data created before what EVERY connection committed is in the warehouse already.
    let floor: string | undefined;
    for (const consumer of live.values()) {
      const newest = consumer.cursor().newestCreatedAt;
      if (newest === undefined) return { granted: true };
      if (floor === undefined || newest < floor) floor = newest;
    }
    return { granted: true, floorCreatedAt: floor };
  };
  const releaseReplay = (slot: number) => {
    if (replayHolder === slot) replayHolder = undefined;
  };

  /** One connection on `slot` until `stop` aborts (it flushes and commits first) or a permanent error. */
  const runSlot = async (slot: number, stop: AbortSignal): Promise<void> => {
    const cursor = streamCursor(settings.name, slot);
    const consumerLog = log.child({ slot });
    // The consumer reads the next batch while this one is written (stream-writer.ts).
    const writer = createStreamWriter({
      warehouse,
      orgId,
      cursor,
      // Beside the cursor, for `status`; loadCursor's reader ignores them.
      extra: { streamId: stream.id, slot },
      log: consumerLog,
      now,
      onWritten: ({ frames, meta, result, startedAt, committedAt }) => {
        addLoadCounts(records, result);
        if (frames.some((f) => f.kind === 'data')) lastDataAt = committedAt;
        void recordPendingGaps();
        options.hooks?.onCommit?.({
          slot,
          via: meta.via,
          reason: meta.reason,
          frames,
          result,
          committedAt,
          durationMs: committedAt - startedAt,
        });
      },
    });
    const consumer = new StreamConsumer(
      {
        openStream: async (s) => {
          try {
            return await openSse(org.http, org.streams.connectUrl(stream.id), org.config.token, s);
          } catch (error) {
            reportConnect422(error, stream.name, consumerLog);
            throw error;
          }
        },
        openReplay: (date, s) =>
          openSse(
            org.http,
            org.streams.replayUrl({ date, ...(resources ? { resources } : {}) }),
            org.config.token,
            s,
          ),
        commit: writer.commit,
        loadCursor: async () => {
          const stored = {
            connectedSince: new Date(platformNow()).toISOString(),
            ...(await readCursor(warehouse.db, orgId, cursor)),
          };
          if (committedThroughOf(stored) !== undefined) return stored;
          return { ...stored, deliveryFrom: await deliveryStart(slot) };
        },
        onGap: (gap) => onGap(slot, gap),
        claimReplay: () => claimReplay(slot),
        releaseReplay: () => releaseReplay(slot),
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
      // Stopped: the last micro-batch and cursor were handed over; wait until they have landed.
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
    reconcile,
    caughtUp: () => {
      if (live.size < connections) return false;
      for (const [slot, consumer] of live) {
        if (writers.get(slot)?.busy() || consumer.quietForMs() <= 0) return false;
      }
      return true;
    },
  };
}

/** Finds or creates the stream, runs it until `signal` aborts, and returns what it did. */
export async function runOrgStream(options: OrgStreamOptions): Promise<OrgStreamSummary> {
  return (await startOrgStream(options)).done;
}

/**
 * The fleet-wide connection slots of a stream (at most 3, the platform's limit): a connection holds one
 * while it runs, and the slot number names its cursor, so two processes never write the same one.
 * The worker implements `AcquireSlot` with Redis locks (src/worker/stream-supervisor.ts).
 */

/**
 * A held connection slot. The worker implements it with Redis locks (one key per slot of a stream,
 * renewed while held); without the hook, connection `i` simply uses slot `i`.
 */
export interface ConnectionSlot {
  /** Fleet-wide slot number, 0..2: it names the connection's cursor, so it must be unique per stream. */
  slot: number;
  /** Aborted when the lock is lost: the connection then stops (flushing) and asks for a slot again. */
  lost?: AbortSignal;
  release(): Promise<void>;
}

/**
 * Waits until a slot of this stream is free and takes it (resolve), or until `signal` aborts (reject or
 * resolve; the caller checks the signal). `index` is this process's connection number (0-based).
 */
export type AcquireSlot = (index: number, signal: AbortSignal) => Promise<ConnectionSlot>;

/**
 * Connection `index` under `acquireSlot`: take a slot, run on it until `signal` aborts or the slot's
 * lock is lost, release it, and take one again after a loss.
 */
export async function runOnSlots(
  index: number,
  acquireSlot: AcquireSlot,
  signal: AbortSignal,
  runSlot: (slot: number, stop: AbortSignal) => Promise<void>,
  log: Pick<Logger, 'warn'>,
): Promise<void> {
  while (!signal.aborted) {
    let lease: ConnectionSlot;
    try {
      lease = await acquireSlot(index, signal);
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    try {
      if (signal.aborted) return;
      await runSlot(lease.slot, lease.lost ? AbortSignal.any([signal, lease.lost]) : signal);
    } finally {
      await lease
        .release()
        .catch((error: unknown) => log.warn({ err: error }, 'releasing a stream slot failed'));
    }
    if (lease.lost?.aborted && !signal.aborted)
      log.warn({ slot: lease.slot }, 'stream slot lost; taking one again');
  }
}
