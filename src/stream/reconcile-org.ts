/**
 * One reconciliation of an organization's stream: everything that delivers again what the primary may have
 * lost, in order (src/stream/README.md, "What each net covers").
 *
 * 1. Deliveries whose process is gone are marked interrupted; a cut pass leaves its own gap.
 * 2. Every open gap goes to whoever can deliver it again: the reconciliation stream's next pass when the
 *    gap lies within what that pass re-delivers without a break; else the provider's replay from the gap's
 *    date (one request for every such gap together); else, for what is older than the replay serves (30
 *    days), a REST backfill of the gap's days.
 * 3. The replay runs first (if any gap needs it), then the pass of the reconciliation stream (if there is
 *    one). Each covers the gaps inside what it delivered without a break, and counts what the primary lost.
 *
 * Without a reconciliation stream (the platform's 5 streams are taken, or `stream.reconcile` is off), the
 * `reconcile` command replays from where the last delivery left off instead of a pass (`replayFrom`).
 */
import type { OrganizationConfig } from '../config/schema.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { abortableSleep, type Clock, systemClock } from '../time/clock.ts';
import type { StreamsClient } from '../validic/streams-client.ts';
import { readCursor, streamCursor } from '../warehouse/cursors.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import {
  type GapHandledBy,
  type PassTrigger,
  readAllOpenStreamGaps,
  readLastDelivery,
  readLastReconcilePass,
  readOpenStreamGaps,
  readRunningDeliveries,
  type StoredStreamGap,
  setStreamGapsHandledBy,
} from '../warehouse/stream-bookkeeping.ts';
import type { StreamConsumerOptionsInput } from './consumer-options.ts';
import { type GapSpan, gapFiller, planGapReplay, splitAtReplayReach } from './gap-delivery.ts';
import { closeDeadDeliveries, deliveryDead } from './interrupted-deliveries.ts';
import {
  findReconcileStream,
  nextStreamCoverFrom,
  type ReconcilePassSummary,
  runDelivery,
} from './reconciliation.ts';

/**
 * Queues a REST backfill of whole UTC days `from..to` (inclusive) for one recorded gap (its id keys the
 * job: one backfill per gap); the CLI runs it inline, the worker in BullMQ.
 */
export type EnqueueGapBackfill = (
  name: 'records.backfill',
  payload: { orgId: string; from: string; to: string; gapId: number },
) => Promise<boolean> | boolean;

export interface ReconcileOrgOptions {
  warehouse: Warehouse;
  org: { config: OrganizationConfig; http: HttpClient; streams: StreamsClient };
  signal: AbortSignal;
  trigger: PassTrigger;
  consumerOptions?: StreamConsumerOptionsInput;
  /** For the days of gaps older than the replay serves. Without it, the log names the backfill command. */
  enqueue?: EnqueueGapBackfill;
  /**
   * Without a reconciliation stream: also replay from this UTC date (clamped to what the replay serves)
   * up to now, re-delivering what a pass would have (the `reconcile` command).
   */
  replayFrom?: string;
  log?: Logger;
  clock?: Clock;
  random?: () => number;
}

export interface ReconcileOrgSummary {
  orgId: string;
  /** The deliveries run, in order: a replay of gaps (if any), then the pass of the reconciliation stream. */
  deliveries: ReconcilePassSummary[];
  /** No reconciliation stream could be had: its name, why, and the fix. */
  unavailable?: { name: string; why: string; fix: string };
  /** Deliveries found interrupted (their process was gone). */
  interrupted: number;
  /** REST backfills queued for gap days older than the replay serves. */
  restBackfills: number;
  /** Gaps still open afterwards. */
  openGaps: number;
}

export async function reconcileOrg(options: ReconcileOrgOptions): Promise<ReconcileOrgSummary> {
  const { warehouse, org, signal } = options;
  const orgId = org.config.orgId;
  const log = (options.log ?? silentLogger).child({ orgId });
  const clock = options.clock ?? systemClock;
  const primary = await readCursor(warehouse.db, orgId, streamCursor(org.config.stream.name, 0));
  const platformNow = () => clock.now() + (primary?.platformOffsetMs ?? 0);
  const common = {
    warehouse,
    org,
    signal,
    trigger: options.trigger,
    log,
    clock,
    ...(options.consumerOptions ? { consumerOptions: options.consumerOptions } : {}),
    ...(options.random ? { random: options.random } : {}),
  };

  const interrupted = await closeDeadDeliveries(warehouse, orgId, platformNow(), log);
  // One delivery at a time per organization: another one (this process or another) ends first.
  await waitForRunningDeliveries(warehouse, orgId, signal);

  const lookup = org.config.stream.reconcile ? await findReconcileStream(org, signal, log) : undefined;
  const streamCoverFromMs = lookup?.ok
    ? nextStreamCoverFrom(
        await readLastReconcilePass(warehouse.db, orgId, lookup.name),
        lookup.stream,
        platformNow(),
      ).coverFromMs
    : undefined;

  const nowMs = platformNow();
  const forReplay: GapSpan[] = [];
  /** The latest end of the gaps left to the pass: it covers only gaps that end before it starts. */
  let passMustStartAfter = -Infinity;
  let restBackfills = 0;
  const decided = new Map<GapHandledBy, number[]>();
  for (const gap of await readAllOpenStreamGaps(warehouse.db, orgId)) {
    const { beyondReplay } = splitAtReplayReach(gap, nowMs);
    let filler: GapHandledBy;
    if (beyondReplay) {
      filler = options.enqueue ? 'rest' : 'planned';
      if (gap.handledBy !== filler) restBackfills += await backfillDays(gap, beyondReplay, options, log);
    } else {
      filler = gapFiller(gap, streamCoverFromMs);
      if (filler === 'replay') forReplay.push(gap);
      else passMustStartAfter = Math.max(passMustStartAfter, Date.parse(gap.to));
    }
    if (filler !== gap.handledBy) decided.set(filler, [...(decided.get(filler) ?? []), gap.id]);
  }
  for (const [filler, ids] of decided) await setStreamGapsHandledBy(warehouse.db, ids, filler);

  if (!lookup?.ok && options.replayFrom !== undefined) {
    // No pass to re-deliver what the primary lost unseen: the replay does it, from where the last delivery
    // left off (or the date asked for).
    const last = await readLastDelivery(warehouse.db, orgId);
    const lastReach = last?.reachTo ?? last?.readTo;
    const from = lastReach ? lastReach.slice(0, 10) : options.replayFrom;
    forReplay.push({ from: `${from}T00:00:00.000Z`, to: new Date(nowMs).toISOString() });
  }

  const deliveries: ReconcilePassSummary[] = [];
  if (forReplay.length > 0 && !signal.aborted) {
    const plan = planGapReplay(forReplay, nowMs);
    if (!lookup?.ok && lookup)
      log.warn(
        { reconcileStream: lookup.name, replayDate: plan.date },
        `no reconciliation stream (${lookup.why}): the provider's replay from ${plan.date} delivers instead`,
      );
    deliveries.push(
      await runDelivery({ ...common, plan: { source: 'replay', date: plan.date, targetMs: plan.targetMs } }),
    );
  }
  // A gap's end is taken late (an estimate errs on the safe side): a pass asked for at once would start
  // before it and could not cover it.
  const early = passMustStartAfter - platformNow();
  if (lookup?.ok && early > 0) await abortableSleep(Math.min(early + 10, 60_000), signal).catch(() => {});
  if (lookup?.ok && !signal.aborted)
    deliveries.push(
      await runDelivery({ ...common, plan: { source: 'stream', stream: lookup.stream, name: lookup.name } }),
    );
  const { open } = await readOpenStreamGaps(warehouse.db, orgId, 1);
  return {
    orgId,
    deliveries,
    ...(lookup && !lookup.ok ? { unavailable: { name: lookup.name, why: lookup.why, fix: lookup.fix } } : {}),
    interrupted,
    restBackfills,
    openGaps: open,
  };
}

/** The part of a gap older than the replay serves: a REST backfill of its days (one per gap). */
async function backfillDays(
  gap: StoredStreamGap,
  part: GapSpan,
  options: Pick<ReconcileOrgOptions, 'enqueue' | 'org'>,
  log: Pick<Logger, 'warn'>,
): Promise<number> {
  const from = part.from.slice(0, 10);
  const to = part.to.slice(0, 10);
  if (!options.enqueue) {
    log.warn(
      { gap },
      `stream gap older than the replay serves: run \`validic-sync backfill --from ${from} --to ${to}\``,
    );
    return 0;
  }
  const orgId = options.org.config.orgId;
  const queued = await options.enqueue('records.backfill', { orgId, from, to, gapId: gap.id });
  log.warn({ gap }, `stream gap older than the replay serves: REST backfill of ${from}..${to} queued`);
  return queued ? 1 : 0;
}

/** Waits while another live delivery of the org runs (at most a pass's timeout). */
async function waitForRunningDeliveries(
  warehouse: Warehouse,
  orgId: string,
  signal: AbortSignal,
  maxMs = 1_800_000,
): Promise<void> {
  const until = Date.now() + maxMs;
  while (!signal.aborted && Date.now() < until) {
    const running = (await readRunningDeliveries(warehouse.db, orgId)).filter((r) => !deliveryDead(r));
    if (running.length === 0) return;
    await abortableSleep(1_000, signal).catch(() => {});
  }
}
