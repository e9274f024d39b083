/**
 * The reconciliation stream (src/stream/README.md, "The reconciliation stream"): the organization's
 * second stream, found or created by name; one delivery (a pass of it, or a replay of the gaps it cannot
 * reach); and the scheduler that runs deliveries in this process when asked.
 *
 * The reconciliation stream is a second main stream of the organization with the same resource filter as
 * the primary (docs/platform.md, "Reconciliation at high volume"). It is connected for a pass now and then
 * and resumes, within 7 days, where its last pass left it: each pass re-delivers everything created
 * since, so what the primary lost arrives again.
 */
import { hostname } from 'node:os';
import type { OrganizationConfig } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { emptyCounts, type LoadCounts } from '../pipeline/batch.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import { abortableSleep, type Clock, systemClock } from '../time/clock.ts';
import { MAX_STREAM_CONNECTIONS, STREAM_CHECKPOINT_RETENTION_DAYS } from '../validic/platform-limits.ts';
import type { StreamInfo, StreamsClient } from '../validic/streams-client.ts';
import { readCursor, streamCursor } from '../warehouse/cursors.ts';
import { applyPreparedBatch, prepareBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import {
  absentVersions,
  coverStreamGaps,
  type DeliverySource,
  type PassOutcomeValue,
  type PassTrigger,
  type ReconcilePassRow,
  readLastReconcilePass,
  readPrimaryCursors,
  recordStreamGap,
  startReconcilePass,
  touchReconcilePass,
  updateReconcilePass,
  type VersionKey,
} from '../warehouse/stream-bookkeeping.ts';
import { CLOCK_ESTIMATE_TOLERANCE_MS, committedThroughOf } from './consumer-cursor.ts';
import type { PassOutcome } from './consumer-machine.ts';
import { resolveStreamConsumerOptions, type StreamConsumerOptionsInput } from './consumer-options.ts';
import { midnightOf } from './gap-delivery.ts';
import { MissedJudge, primaryView } from './judge-missed.ts';
import { openSse } from './sse-reader.ts';
import { StreamConsumer } from './stream-consumer.ts';
import { addLoadCounts } from './stream-summary.ts';
import { toRawItems } from './stream-writer.ts';

/** The reconciliation stream's name: `stream.reconcileName`, default `<stream name>-reconcile`. */
export function reconcileStreamName(settings: { name: string; reconcileName?: string | undefined }): string {
  return settings.reconcileName ?? `${settings.name}-reconcile`;
}

/** The stream's `created_at` as an ISO time (platform clock), when the platform gave one. */
export function streamCreatedAt(stream: StreamInfo): string | undefined {
  const value = stream.created_at;
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

export type ReconcileStreamLookup =
  | { ok: true; stream: StreamInfo; name: string }
  | { ok: false; name: string; why: string; fix: string };

/**
 * Finds the org's reconciliation stream by name, or creates it (it counts toward the platform's 5 streams
 * per customer). A refusal (the limit, a bad filter) is an answer, not an error: the primary stream goes
 * on without reconciliation, and `status` says why.
 */
export async function findReconcileStream(
  org: { config: OrganizationConfig; streams: StreamsClient },
  signal: AbortSignal,
  log: Pick<Logger, 'warn'>,
): Promise<ReconcileStreamLookup> {
  const settings = org.config.stream;
  const name = reconcileStreamName(settings);
  const resources = settings.resources && settings.resources.length > 0 ? settings.resources : undefined;
  try {
    const stream = await org.streams.findOrCreateStream({
      name,
      ...(resources ? { resources } : {}),
      signal,
    });
    return { ok: true, stream, name };
  } catch (error) {
    if (!(error instanceof UserFacingError)) throw error;
    const result = {
      ok: false as const,
      name,
      why: redactedMessage(error),
      fix:
        error.fix ??
        'free one of the 5 streams the platform allows per customer, or set stream.reconcile to false',
    };
    log.warn(
      { reconcileStream: name, fix: result.fix },
      `reconciliation stream unavailable: ${result.why}; the primary stream runs without it, and events it loses are not re-delivered`,
    );
    return result;
  }
}

/**
 * Where the reconciliation stream's next pass re-delivers from without a break (platform ms): the stream's
 * creation before its first pass (it re-delivers from then on); after a pass, where that pass left the
 * stream (`next_cover_from`: its own start of coverage when it ended with nothing in flight, else when it
 * stopped reading: what the stream had sent it and it had not committed is gone); after more than 7 days
 * unconnected, now (the platform no longer keeps the checkpoint).
 */
export function nextStreamCoverFrom(
  last: ReconcilePassRow | undefined,
  stream: StreamInfo,
  nowMs: number,
): { coverFromMs: number; chainFrom: string } {
  const created = Date.parse(streamCreatedAt(stream) ?? new Date(nowMs).toISOString());
  if (!last || last.streamId !== stream.id) {
    const from = Math.min(created, nowMs);
    return { coverFromMs: from, chainFrom: new Date(from).toISOString() };
  }
  const lastSeen = Date.parse(last.endedAt ?? last.heartbeatAt ?? last.startedAt);
  if (nowMs - lastSeen > STREAM_CHECKPOINT_RETENTION_DAYS * DAY_MS)
    return { coverFromMs: nowMs, chainFrom: new Date(nowMs).toISOString() };
  const next =
    last.outcome === 'running'
      ? (last.coverFrom ?? last.reachFrom)
      : (last.nextCoverFrom ?? last.readTo ?? last.reachTo ?? last.reachFrom);
  return { coverFromMs: Date.parse(next), chainFrom: last.chainFrom };
}

/**
 * One delivery (src/stream/README.md, "The reconciliation stream"): a pass of the reconciliation stream
 * (it resumes where its last pass left it, within 7 days), or the provider's replay from a date (for the
 * gaps that stream cannot reach). It reads until caught up, commits through the one loader (tagged
 * `reconcile` or `replay`), judges what the primary missed (judge-missed.ts), and marks covered the open
 * gaps inside what it delivered without a break.
 *
 * Caught up: each connection (a `StreamConsumer` with `role: 'pass'`) ends at the first event created at
 * or after T, or at `quietPokes` pokes stamped at or after T, on the platform's clock. T is the pass's
 * start (reconciliation stream) or the latest end of the gaps it fills (replay).
 *
 * A connection of a pass that ends uncleanly (dropped, stale, stopped while data flowed, timed out) is a
 * gap of its own, [what it had committed, when it stopped reading], which only the replay can deliver
 * again; the pass's coverage then starts after it. A replay has no such gaps: it starts again from its
 * date on every connect. A delivery whose process dies is found by the next run (interrupted-deliveries.ts).
 */

const DAY_MS = 86_400_000;

/** What a delivery reads: the reconciliation stream, or the replay from a date up to a target. */
export type DeliveryPlan =
  | { source: 'stream'; stream: StreamInfo; name: string }
  | { source: 'replay'; date: string; targetMs: number };

export interface DeliveryOptions {
  warehouse: Warehouse;
  org: { config: OrganizationConfig; http: HttpClient; streams: StreamsClient };
  plan: DeliveryPlan;
  /** Stops the delivery (it commits what it read first; outcome `stopped`). */
  signal: AbortSignal;
  trigger: PassTrigger;
  consumerOptions?: StreamConsumerOptionsInput;
  /** Connections to open, 1..3. Default: the org's `stream.connections` (a replay: 1). */
  connections?: number;
  log?: Logger;
  clock?: Clock;
  random?: () => number;
}

export interface ReconcilePassSummary {
  orgId: string;
  /** The reconciliation stream's name, or `replay`. */
  streamName: string;
  source: DeliverySource;
  /** A replay's UTC start date. */
  replayDate?: string;
  /** `unavailable`: the reconciliation stream could not be found or created (`unavailable` says why). */
  outcome: PassOutcomeValue | 'unavailable';
  unavailable?: { why: string; fix: string };
  passId?: number;
  streamId?: string;
  /** Platform time the delivery re-delivered from without a break, and up to (when caught up). */
  reachFrom?: string;
  reachTo?: string | null;
  /** Data frames read. */
  frames: number;
  counts: LoadCounts;
  /** Record versions and connection events the primary could not have committed: what it lost. */
  missed: number;
  /** Open gaps this delivery covered. */
  gapsCovered: number;
  /** Gaps of its own (a connection of a pass that ended uncleanly), left to the replay. */
  gapsCut: number;
  seconds: number;
}

/** How long a delivery's row goes without a sign of life before a later run calls it interrupted. */
export const DELIVERY_HEARTBEAT_MS = 10_000;

export async function runDelivery(options: DeliveryOptions): Promise<ReconcilePassSummary> {
  const { warehouse, org, signal, trigger, plan } = options;
  const orgId = org.config.orgId;
  const source = plan.source;
  const streamName = source === 'stream' ? plan.name : 'replay';
  const log = (options.log ?? silentLogger).child({ orgId, delivery: source, pass: trigger });
  const clock = options.clock ?? systemClock;
  const now = () => clock.now();
  const started = now();
  const seconds = () => Number(((now() - started) / 1000).toFixed(1));
  const counts = emptyCounts();
  const consumerOptions = resolveStreamConsumerOptions(options.consumerOptions);

  // The platform's clock, from the primary stream's last pokes (its checkpoint): T is on it.
  const primaryName = org.config.stream.name;
  const primary = await readCursor(warehouse.db, orgId, streamCursor(primaryName, 0));
  const offsetMs = primary?.platformOffsetMs ?? 0;
  const platformNow = () => now() + offsetMs;
  const startMs = started + offsetMs;

  let coverFromMs: number;
  let chainFrom: string;
  if (plan.source === 'stream') {
    const last = await readLastReconcilePass(warehouse.db, orgId, plan.name);
    ({ coverFromMs, chainFrom } = nextStreamCoverFrom(last, plan.stream, startMs));
  } else {
    coverFromMs = midnightOf(plan.date);
    chainFrom = new Date(coverFromMs).toISOString();
  }
  const reachFrom = new Date(coverFromMs).toISOString();
  const passId = await startReconcilePass(warehouse.db, {
    orgId,
    streamName,
    streamId: plan.source === 'stream' ? plan.stream.id : 'replay',
    source,
    ...(plan.source === 'replay' ? { replayDate: plan.date } : {}),
    trigger,
    startedAt: new Date(started).toISOString(),
    chainFrom,
    reachFrom,
    coverFrom: reachFrom,
    host: hostname(),
    pid: process.pid,
  });
  log.info(
    {
      passId,
      reachFrom,
      ...(plan.source === 'replay'
        ? { replayDate: plan.date, target: new Date(plan.targetMs).toISOString() }
        : { streamId: plan.stream.id }),
    },
    plan.source === 'stream' ? 'reconciliation pass started' : 'gap replay started',
  );

  let frames = 0;
  let newest: string | undefined;
  let gapsCut = 0;
  const judge = new MissedJudge({
    clock,
    maxWaitMs: consumerOptions.heartbeatCommitMs,
    maxHeld: consumerOptions.microBatch.maxFrames,
    // Live: connected and heard from within the heartbeat (a live connection commits its cursor at
    // least that often), with some room for a slow commit.
    primary: async () =>
      primaryView(
        await readPrimaryCursors(warehouse.db, orgId, primaryName),
        platformNow(),
        consumerOptions.heartbeatCommitMs + consumerOptions.staleAfterMs,
      ),
    absent: (keys) => absentKeys(warehouse, orgId, keys),
    load: async (batch) => {
      const prepared = await prepareBatch({
        orgId,
        arrivedVia: source === 'stream' ? 'reconcile' : 'replay',
        items: toRawItems(batch),
      });
      addLoadCounts(counts, await applyPreparedBatch(warehouse, prepared, {}, { log }));
    },
  });

  const connections =
    source === 'replay'
      ? 1
      : Math.min(
          MAX_STREAM_CONNECTIONS,
          Math.max(1, Math.floor(options.connections ?? org.config.stream.connections)),
        );
  const deliveryFrom = new Date(coverFromMs).toISOString();
  const consumers: StreamConsumer[] = [];
  /** Everything read before this (platform ms) is committed: where a crash's gap would begin. */
  const committedTo = (): string => {
    const marks = consumers.map((c) => committedThroughOf(c.cursor()) ?? coverFromMs);
    const held = judge.oldestHeldMs();
    const through = Math.min(...marks, held === undefined ? Infinity : held - 1);
    return new Date(Number.isFinite(through) ? through : coverFromMs).toISOString();
  };
  // Batches land one at a time per connection; the row's counters are the running total.
  let progress = Promise.resolve();
  const record = () => {
    progress = progress
      .then(() =>
        updateReconcilePass(warehouse.db, passId, {
          frames,
          counts,
          missed: judge.missed,
          committedTo: committedTo(),
          coverFrom: new Date(coverFromMs).toISOString(),
          reachTo: null,
        }),
      )
      .catch((error: unknown) => log.warn({ err: error }, 'could not update the delivery row'));
    return progress;
  };
  const heartbeat = setInterval(() => {
    void touchReconcilePass(warehouse.db, passId).catch(() => {});
  }, DELIVERY_HEARTBEAT_MS);
  heartbeat.unref();

  const resources = org.config.stream.resources;
  const openUrl = (): URL =>
    plan.source === 'stream'
      ? org.streams.connectUrl(plan.stream.id)
      : org.streams.replayUrl({
          date: plan.date,
          ...(resources && resources.length > 0 ? { resources } : {}),
        });
  for (let slot = 0; slot < connections; slot++) {
    consumers.push(
      new StreamConsumer(
        {
          openStream: () => Promise.reject(new Error('a delivery opens no primary stream')),
          openReplay: (_date, s) => openSse(org.http, openUrl(), org.config.token, s),
          commit: async (batch) => {
            if (batch.length === 0) return;
            for (const frame of batch) {
              if (frame.kind !== 'data') continue;
              frames += 1;
              if (frame.createdAt && (newest === undefined || frame.createdAt > newest))
                newest = frame.createdAt;
            }
            await judge.take(batch);
            await record();
          },
          loadCursor: async () => ({
            ...(primary?.platformOffsetMs === undefined ? {} : { platformOffsetMs: offsetMs }),
            deliveryFrom,
          }),
          onGap: async (gap) => {
            // A replay starts again from its date on every connect: nothing it was sent is lost to it.
            if (plan.source === 'replay') return;
            gapsCut += 1;
            coverFromMs = Math.max(coverFromMs, Date.parse(gap.to));
            await recordStreamGap(warehouse.db, {
              orgId,
              streamName,
              slot,
              from: gap.from,
              to: gap.to,
              reason: gap.reason,
              handledBy: 'replay',
            }).catch((error: unknown) => log.warn({ err: error, gap }, 'could not record a gap of the pass'));
            await record();
          },
          onStateChange: (from, to, reason) => log.debug({ slot, from, to, reason }, 'delivery state'),
          log: log.child({ slot }),
          clock,
          ...(options.random ? { random: options.random } : {}),
        },
        {
          ...options.consumerOptions,
          role: 'pass',
          ...(plan.source === 'replay' ? { passReplay: { catchUpAtMs: plan.targetMs } } : {}),
        },
      ),
    );
  }
  let results: PromiseSettledResult<void>[];
  try {
    results = await Promise.allSettled(consumers.map((consumer) => consumer.run(signal)));
    await progress;
    // What the live primary may still have been committing is judged once its batch in flight landed.
    await judge.finish({ stopping: signal.aborted });
  } catch (error) {
    // What it read and did not commit is gone from the reconciliation stream: a gap for the replay.
    if (plan.source === 'stream')
      await recordStreamGap(warehouse.db, {
        orgId,
        streamName,
        slot: 0,
        from: committedTo(),
        to: new Date(
          Math.max(platformNow() + CLOCK_ESTIMATE_TOLERANCE_MS, Date.parse(committedTo())),
        ).toISOString(),
        reason: 'pass-failed',
        handledBy: 'replay',
      }).catch(() => {});
    // The row must not stay `running` for this (live) process: later reconciliations would wait on it.
    await updateReconcilePass(warehouse.db, passId, {
      frames,
      counts,
      missed: judge.missed,
      outcome: 'failed',
      endedAt: new Date(now()).toISOString(),
      readTo: new Date(platformNow() + CLOCK_ESTIMATE_TOLERANCE_MS).toISOString(),
      nextCoverFrom: new Date(platformNow() + CLOCK_ESTIMATE_TOLERANCE_MS).toISOString(),
    }).catch(() => {});
    throw error;
  } finally {
    clearInterval(heartbeat);
  }

  const outcomes = consumers.map((consumer) => consumer.passOutcome());
  const failure = results.find((r) => r.status === 'rejected');
  const outcome = combineOutcomes(outcomes, failure !== undefined);
  // Caught up: every connection delivered everything created before its T; the earliest is the reach.
  const reached = consumers.map((consumer) => consumer.passReachedMs());
  const reachTo =
    outcome === 'caught-up' ? new Date(Math.min(...reached.map((ms) => ms ?? startMs))).toISOString() : null;
  // After this (an estimate, taken late) the stream sent this pass nothing.
  const readTo = new Date(platformNow() + CLOCK_ESTIMATE_TOLERANCE_MS).toISOString();
  // The next pass goes on exactly where this one stopped only when nothing was in flight at its end.
  const quiet = gapsCut === 0 && consumers.every((consumer) => consumer.passEndedQuiet());
  const nextCoverFrom = quiet ? new Date(coverFromMs).toISOString() : readTo;
  let gapsCovered = 0;
  if (outcome === 'caught-up' && reachTo)
    gapsCovered = await coverStreamGaps(
      warehouse.db,
      orgId,
      passId,
      new Date(coverFromMs).toISOString(),
      reachTo,
    );
  await updateReconcilePass(warehouse.db, passId, {
    frames,
    counts,
    missed: judge.missed,
    committedTo: committedTo(),
    coverFrom: new Date(coverFromMs).toISOString(),
    outcome,
    endedAt: new Date(now()).toISOString(),
    reachTo,
    readTo,
    nextCoverFrom,
  });
  const missed = judge.missed;
  const summary: ReconcilePassSummary = {
    orgId,
    streamName,
    source,
    ...(plan.source === 'replay' ? { replayDate: plan.date } : {}),
    outcome,
    passId,
    streamId: plan.source === 'stream' ? plan.stream.id : 'replay',
    reachFrom: new Date(coverFromMs).toISOString(),
    reachTo,
    frames,
    counts: { ...counts },
    missed,
    gapsCovered,
    gapsCut,
    seconds: seconds(),
  };
  const line = {
    passId,
    outcome,
    frames,
    missed,
    inserted: counts.inserted,
    updated: counts.updated,
    gapsCovered,
    gapsCut,
    reachFrom: summary.reachFrom,
    reachTo,
    seconds: summary.seconds,
  };
  const what = source === 'stream' ? 'reconciliation pass' : `gap replay from ${summary.replayDate}`;
  if (failure)
    log.error({ ...line, err: failure.reason }, `${what} failed: ${redactedMessage(failure.reason)}`);
  else if (outcome === 'caught-up')
    log.info(line, `${what}: ${missed} missed by the stream, ${frames} re-delivered`);
  else log.warn(line, `${what} ended ${outcome}: ${missed} missed by the stream so far`);
  return summary;
}

/** Which of some version keys (judge-missed.ts `versionKey`) the warehouse holds nowhere. */
async function absentKeys(
  warehouse: Warehouse,
  orgId: string,
  keys: readonly string[],
): Promise<Set<string>> {
  const versions: VersionKey[] = [];
  const events: string[] = [];
  for (const key of keys) {
    if (key.startsWith(EVENT_KEY_PREFIX)) events.push(key.slice(EVENT_KEY_PREFIX.length));
    else {
      const at = key.lastIndexOf('\u0001');
      versions.push({ id: key.slice(0, at), checksum: key.slice(at + 1) });
    }
  }
  const absent = await absentVersions(warehouse.db, orgId, versions, events);
  return new Set([...absent.versions, ...[...absent.events].map((id) => `${EVENT_KEY_PREFIX}${id}`)]);
}

const EVENT_KEY_PREFIX = 'event\u0001';

/** The pass's outcome from its connections': caught up only when every one of them is. */
function combineOutcomes(
  outcomes: (PassOutcome | undefined)[],
  failed: boolean,
): Exclude<PassOutcomeValue, 'running' | 'interrupted'> {
  if (failed) return 'failed';
  if (outcomes.every((o) => o === 'caught-up')) return 'caught-up';
  if (outcomes.includes('stopped')) return 'stopped';
  if (outcomes.includes('timed-out')) return 'timed-out';
  return 'failed';
}

/**
 * Runs reconciliations in this process when asked (`validic-sync stream`; the worker queues the
 * `streams.reconcile` job instead): one at a time, and each only once the primary stream has caught up
 * (`ready`), so that what a delivery finds missing is what the primary lost, not what it was about to
 * deliver. A request while one runs is served by one more after it (the running one may have started
 * before the gap it is asked for).
 */
export interface PassScheduler<Result> {
  /** Asks for a reconciliation: soon, once `ready()`. */
  request(): void;
  /** True when none is waiting or running. */
  idle(): boolean;
  /** Resolves once none is waiting or running. */
  drain(): Promise<void>;
  /** The reconciliations run so far, in order. */
  passes(): Result[];
}

export interface PassSchedulerOptions<Result> {
  run(): Promise<Result>;
  /** Whether one may start now (the primary has caught up). */
  ready(): boolean;
  /** One waits at most this long for `ready` (the primary may stay down), ms. Default 60,000. */
  maxWaitMs?: number;
  /** Stops waiting (one that runs is stopped by its own signal). */
  signal: AbortSignal;
  onError(error: unknown): void;
}

export function createPassScheduler<Result>(options: PassSchedulerOptions<Result>): PassScheduler<Result> {
  const maxWaitMs = options.maxWaitMs ?? 60_000;
  const done: Result[] = [];
  let wanted = false;
  // `running`, not the promise, says whether the loop runs: a loop that finds nothing to do (the signal
  // already aborted) ends synchronously, before `request` could store its promise, and a stored settled
  // promise would keep `drain` awaiting it forever.
  let running = false;
  let loop: Promise<void> = Promise.resolve();

  const waitUntilReady = async () => {
    const until = Date.now() + maxWaitMs;
    while (!options.ready() && Date.now() < until && !options.signal.aborted) {
      await abortableSleep(100, options.signal).catch(() => {});
    }
  };

  const runLoop = async () => {
    try {
      while (wanted && !options.signal.aborted) {
        wanted = false;
        await waitUntilReady();
        if (options.signal.aborted) break;
        try {
          done.push(await options.run());
        } catch (error) {
          options.onError(error);
        }
      }
    } finally {
      running = false;
    }
  };

  return {
    request() {
      wanted = true;
      if (running) return;
      running = true;
      loop = runLoop();
    },
    idle: () => !running,
    async drain() {
      while (running) await loop;
    },
    passes: () => [...done],
  };
}
