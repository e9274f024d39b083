/**
 * The reconciliation stream (src/stream/README.md, "The reconciliation stream"): the organization's
 * second stream, found or created by name; one pass of it; and the scheduler that runs passes in this
 * process when asked.
 */
import type { OrganizationConfig } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { emptyCounts, type LoadCounts } from '../pipeline/batch.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import { abortableSleep, type Clock } from '../time/clock.ts';
import { MAX_STREAM_CONNECTIONS, STREAM_CHECKPOINT_RETENTION_DAYS } from '../validic/platform-limits.ts';
import type { StreamInfo, StreamsClient } from '../validic/streams-client.ts';
import { readCursor, streamPositionCursor } from '../warehouse/cursors.ts';
import { applyPreparedBatch, prepareBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import {
  absentVersions,
  coverStreamGaps,
  type PassOutcomeValue,
  type PassTrigger,
  readLastReconcilePass,
  startReconcilePass,
  updateReconcilePass,
  type VersionKey,
} from '../warehouse/stream-bookkeeping.ts';
import type { PassOutcome } from './consumer-machine.ts';
import type { StreamConsumerOptionsInput } from './consumer-options.ts';
import { openSse, toRawItems } from './frames.ts';
import { StreamConsumer } from './stream-consumer.ts';
import { addLoadCounts } from './stream-summary.ts';
import type { DataFrame } from './types.ts';

/**
 * The reconciliation stream: a second main stream of the organization with the same resource filter as
 * the primary (PLATFORM-FACTS.md, "Reconciliation at high volume"). It is connected for a pass now and
 * then (below) and resumes, within 7 days, where its last pass left off: each pass
 * re-delivers everything created since, so what the primary lost arrives again.
 */

/**
 * How far a gap's platform time may be off: before a connection's first poke it is estimated from the
 * `Date` header, which carries whole seconds. A gap that starts within this of where the reconciliation
 * stream's reach begins is taken as inside it.
 */
export const CLOCK_ESTIMATE_TOLERANCE_MS = 2_000;

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
 * One pass of the reconciliation stream (src/stream/README.md, "The reconciliation stream"): connect
 * to the organization's second stream, read what it re-delivers since its last pass, commit it through
 * the one loader (`arrived_via = 'reconcile'`) until caught up, then disconnect.
 *
 * Caught up: each connection (a `StreamConsumer` with `role: 'pass'`) ends at the first event created at
 * or after the pass's start T, or at `quietPokes` pokes stamped at or after T ("nothing more flows"),
 * both on the platform's clock (STATE-MACHINE.md, "Passes"). Everything created before T has then been
 * delivered, so the pass covers [where the last pass left off, T): the open gaps inside that span are
 * marked covered. What the pass brings that the warehouse held nowhere (a record version, current or kept as
 * an older one, or a connection event; counted per version, whatever the batching or the order of the
 * connections) is what the primary stream had missed.
 *
 * The platform keeps the stream's position for 7 days after a disconnect; a chain of passes less than 7
 * days apart re-delivers everything from the chain's start (the stream's creation). After a longer
 * pause the position is gone and a new chain starts at the pass's own start.
 */

const DAY_MS = 86_400_000;

export interface ReconcilePassOptions {
  warehouse: Warehouse;
  org: { config: OrganizationConfig; http: HttpClient; streams: StreamsClient };
  /** Stops the pass (it commits what it read first; outcome `stopped`). */
  signal: AbortSignal;
  trigger: PassTrigger;
  consumerOptions?: StreamConsumerOptionsInput;
  /** Connections to open, 1..3. Default: the org's `stream.connections`. */
  connections?: number;
  log?: Logger;
  clock?: Clock;
  random?: () => number;
}

export interface ReconcilePassSummary {
  orgId: string;
  streamName: string;
  /** `unavailable`: the reconciliation stream could not be found or created (`unavailable` says why). */
  outcome: PassOutcomeValue | 'unavailable';
  unavailable?: { why: string; fix: string };
  passId?: number;
  streamId?: string;
  /** Platform time the pass re-delivered from, and up to (when caught up). */
  reachFrom?: string;
  reachTo?: string | null;
  /** Data frames read. */
  frames: number;
  counts: LoadCounts;
  /**
   * Record versions and connection events the warehouse held nowhere (not current, not kept as an older
   * version) when the pass brought them: what the primary stream had missed.
   */
  missed: number;
  /** Open gaps this pass covered. */
  gapsCovered: number;
  seconds: number;
}

/** The record versions and connection events among a batch's data frames (other shapes are the loader's). */
function frameKeys(batch: readonly DataFrame[]): { versions: VersionKey[]; events: string[] } {
  const versions: VersionKey[] = [];
  const events: string[] = [];
  for (const frame of batch) {
    if (frame.kind !== 'data') continue;
    const p = frame.payload as { id?: unknown; checksum?: unknown; action?: unknown } | null;
    if (typeof p?.id !== 'string') continue;
    if (typeof p.action === 'string') events.push(p.id);
    else if (typeof p.checksum === 'string') versions.push({ id: p.id, checksum: p.checksum });
  }
  return { versions, events };
}

export async function runReconcilePass(options: ReconcilePassOptions): Promise<ReconcilePassSummary> {
  const { warehouse, org, signal, trigger } = options;
  const orgId = org.config.orgId;
  const log = (options.log ?? silentLogger).child({ orgId, pass: trigger });
  const now = () => options.clock?.now() ?? Date.now();
  const started = now();
  const seconds = () => Number(((now() - started) / 1000).toFixed(1));
  const counts = emptyCounts();
  const nothing = { frames: 0, counts, missed: 0, gapsCovered: 0 };

  const lookup = await findReconcileStream(org, signal, log);
  if (!lookup.ok) {
    return {
      orgId,
      streamName: lookup.name,
      outcome: 'unavailable',
      unavailable: { why: lookup.why, fix: lookup.fix },
      ...nothing,
      seconds: seconds(),
    };
  }
  const { stream, name } = lookup;

  // The platform's clock, from the primary stream's last pokes (its checkpoint): T is on it.
  const primary = await readCursor(warehouse.db, orgId, streamPositionCursor(org.config.stream.name, 0));
  const offsetMs = primary?.platformOffsetMs ?? 0;
  const startIso = new Date(started + offsetMs).toISOString();

  const last = await readLastReconcilePass(warehouse.db, orgId, name);
  const createdAt = streamCreatedAt(stream) ?? startIso;
  let chainFrom: string;
  let reachFrom: string;
  if (!last || last.streamId !== stream.id) {
    // The stream is new (or was recreated): it re-delivers from its creation on.
    chainFrom = new Date(Math.min(Date.parse(createdAt), Date.parse(startIso))).toISOString();
    reachFrom = chainFrom;
  } else if (
    Date.parse(startIso) - Date.parse(last.endedAt ?? last.startedAt) >
    STREAM_CHECKPOINT_RETENTION_DAYS * DAY_MS
  ) {
    // Not connected for longer than the platform keeps the position: nothing older is promised.
    chainFrom = startIso;
    reachFrom = startIso;
  } else {
    chainFrom = last.chainFrom;
    reachFrom = last.reachTo ?? last.reachFrom;
  }
  const passId = await startReconcilePass(warehouse.db, {
    orgId,
    streamName: name,
    streamId: stream.id,
    trigger,
    startedAt: new Date(started).toISOString(),
    chainFrom,
    reachFrom,
  });
  log.info({ passId, streamId: stream.id, reachFrom }, 'reconciliation pass started');

  let frames = 0;
  let newest: string | undefined;
  /** Record versions and connection events the warehouse held nowhere when the pass brought them. */
  const missedKeys = new Set<string>();
  // Pass batches are written one at a time per connection; the row's counters are the running total.
  let progress = Promise.resolve();
  const record = () => {
    progress = progress
      .then(() =>
        updateReconcilePass(warehouse.db, passId, {
          frames,
          counts,
          missed: missedKeys.size,
          reachTo: newest ?? null,
        }),
      )
      .catch((error: unknown) => log.warn({ err: error }, 'could not update the reconciliation pass row'));
    return progress;
  };

  const connections = Math.min(
    MAX_STREAM_CONNECTIONS,
    Math.max(1, Math.floor(options.connections ?? org.config.stream.connections)),
  );
  const consumers = Array.from(
    { length: connections },
    (_, slot) =>
      new StreamConsumer(
        {
          openStream: () => Promise.reject(new Error('a reconciliation pass opens no primary stream')),
          openReplay: (_date, s) => openSse(org.http, org.streams.connectUrl(stream.id), org.config.token, s),
          commit: async (batch) => {
            if (batch.length === 0) return;
            const prepared = await prepareBatch({ orgId, arrivedVia: 'reconcile', items: toRawItems(batch) });
            // What the warehouse holds nowhere before this load is what the primary missed: counted per
            // version, so neither the batching nor the order of the connections changes the figure.
            const { versions, events } = frameKeys(batch);
            const absent = await absentVersions(warehouse.db, orgId, versions, events);
            for (const k of absent.versions) missedKeys.add(k);
            for (const id of absent.events) missedKeys.add(`event\u0001${id}`);
            const result = await applyPreparedBatch(warehouse, prepared, {}, { log });
            addLoadCounts(counts, result);
            for (const frame of batch) {
              if (frame.kind !== 'data') continue;
              frames += 1;
              if (frame.createdAt && (newest === undefined || frame.createdAt > newest))
                newest = frame.createdAt;
            }
            await record();
          },
          loadPosition: async () =>
            primary?.platformOffsetMs === undefined ? {} : { platformOffsetMs: offsetMs },
          onStateChange: (from, to, reason) =>
            log.debug({ slot, from, to, reason }, 'reconciliation pass state'),
          log: log.child({ slot }),
          ...(options.clock ? { clock: options.clock } : {}),
          ...(options.random ? { random: options.random } : {}),
        },
        { ...options.consumerOptions, role: 'pass' },
      ),
  );
  const results = await Promise.allSettled(consumers.map((consumer) => consumer.run(signal)));
  await progress;

  const outcomes = consumers.map((consumer) => consumer.passOutcome());
  const failure = results.find((r) => r.status === 'rejected');
  const outcome = combineOutcomes(outcomes, failure !== undefined);
  // Caught up: every connection delivered everything created before its T (the pass's start on the
  // platform's clock, as each connection knew it); the earliest is what the pass covers.
  const reached = consumers.map((consumer) => consumer.passReachedMs());
  const reachTo =
    outcome === 'caught-up'
      ? new Date(Math.min(...reached.map((ms) => ms ?? Date.parse(startIso)))).toISOString()
      : (newest ?? null);
  let gapsCovered = 0;
  if (outcome === 'caught-up' && reachTo)
    gapsCovered = await coverStreamGaps(
      warehouse.db,
      orgId,
      passId,
      new Date(Date.parse(chainFrom) - CLOCK_ESTIMATE_TOLERANCE_MS).toISOString(),
      reachTo,
    );
  await updateReconcilePass(warehouse.db, passId, {
    frames,
    counts,
    missed: missedKeys.size,
    outcome,
    endedAt: new Date(now()).toISOString(),
    reachTo,
  });
  const missed = missedKeys.size;
  const summary: ReconcilePassSummary = {
    orgId,
    streamName: name,
    outcome,
    passId,
    streamId: stream.id,
    reachFrom,
    reachTo,
    frames,
    counts: { ...counts },
    missed,
    gapsCovered,
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
    reachFrom,
    reachTo,
    seconds: summary.seconds,
  };
  if (failure)
    log.error(
      { ...line, err: failure.reason },
      `reconciliation pass failed: ${redactedMessage(failure.reason)}`,
    );
  else if (outcome === 'caught-up')
    log.info(line, `reconciliation pass: ${missed} missed by the stream, ${frames} re-delivered`);
  else log.warn(line, `reconciliation pass ended ${outcome}: ${missed} missed by the stream so far`);
  return summary;
}

/** The pass's outcome from its connections': caught up only when every one of them is. */
function combineOutcomes(
  outcomes: (PassOutcome | undefined)[],
  failed: boolean,
): Exclude<PassOutcomeValue, 'running'> {
  if (failed) return 'failed';
  if (outcomes.every((o) => o === 'caught-up')) return 'caught-up';
  if (outcomes.includes('stopped')) return 'stopped';
  if (outcomes.includes('timed-out')) return 'timed-out';
  return 'failed';
}

/**
 * Runs reconciliation passes in this process when asked (`validic-sync stream`; the worker queues the
 * `streams.reconcile` job instead): one at a time, and each only once the primary stream has caught up
 * (`ready`), so that what the pass finds missing is what the primary lost, not what it was about to
 * deliver. A request while a pass runs is served by one more pass after it (the running one may have
 * started before the gap it is asked for).
 */
export interface PassScheduler {
  /** Asks for a pass: soon, once `ready()`. */
  request(): void;
  /** True when no pass is waiting or running. */
  idle(): boolean;
  /** Resolves once no pass is waiting or running. */
  drain(): Promise<void>;
  /** The passes run so far, in order. */
  passes(): ReconcilePassSummary[];
}

export interface PassSchedulerOptions {
  run(): Promise<ReconcilePassSummary>;
  /** Whether a pass may start now (the primary has caught up). */
  ready(): boolean;
  /** A pass waits at most this long for `ready` (the primary may stay down), ms. Default 60,000. */
  maxWaitMs?: number;
  /** Stops waiting (a pass that runs is stopped by its own signal). */
  signal: AbortSignal;
  onError(error: unknown): void;
}

export function createPassScheduler(options: PassSchedulerOptions): PassScheduler {
  const maxWaitMs = options.maxWaitMs ?? 60_000;
  const done: ReconcilePassSummary[] = [];
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
