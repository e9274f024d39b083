/**
 * records.audit: the completeness audit (src/audit/README.md). Three shapes of one job:
 *
 * - a command's plan (`from`/`to`): a simple random sample of `sample` of the range's cells (users ×
 *   resources × ≤ 30-day windows), recorded as a run of `validic_sync.audits`, fanned out in jobs of
 *   `audit.cellsPerJob` cells;
 * - a scheduled tick (no range): a simple random sample within each stratum (recent, history), as many
 *   cells as the budget plan's audit share allows per `schedules.auditMinutes`, fanned out alike;
 * - a run's cells (`auditId` and `cells`): each fetched, compared and repaired (src/audit/audit-cell.ts),
 *   and recorded with its outcome; a tick's cell no sync has covered yet is recorded `unsynced` without a
 *   request; a retried job skips the cells it recorded before.
 */

import { z } from 'zod';
import { auditCell } from '../src/audit/audit-cell.ts';
import {
  auditStrata,
  drawCommandCells,
  drawTickCells,
  populationSize,
  seededUniform,
  stratumPopulations,
} from '../src/audit/sample-cells.ts';
import { isoDate, jobKey } from '../src/queue/job-definition.ts';
import { EDGE_DAYS, planDateWindows, toV2Resource, V2_RESOURCES } from '../src/validic/platform-limits.ts';
import type { AuditCell, AuditedCell, AuditTotals } from '../src/warehouse/audits.ts';
import { type CatalogJobContext, defineJob } from './job-context.ts';

/** One cell of the completeness audit (src/audit/sample-cells.ts). */
const auditCellPayload = z.object({
  uid: z.string().min(1),
  resource: z.string().min(1),
  startDate: isoDate,
  endDate: isoDate,
  stratum: z.enum(['all', 'recent', 'history']),
});
/**
 * The payload. With `auditId` and `cells`: audit those cells of that run.
 * Without: plan a run, a command's (`from`/`to`, `sample`, `uids`, `seed`) or, with none of them, a
 * scheduled tick's, and fan its cells out.
 */
export const recordsAuditPayload = z
  .object({
    orgId: z.string().min(1),
    auditId: z.number().int().positive().optional(),
    cells: z.array(auditCellPayload).optional(),
    from: isoDate.optional(),
    to: isoDate.optional(),
    /** Share of the range's cells to draw, (0, 1]. */
    sample: z.number().gt(0).max(1).optional(),
    uids: z.array(z.string().min(1)).optional(),
    /** Seed of the random draw; default: a new one (the run's row keeps it). */
    seed: z.string().min(1).optional(),
    /** Load what is missing or stale (false: report only). */
    repair: z.boolean().default(true),
  })
  .refine((p) => (p.from === undefined) === (p.to === undefined), {
    message: 'give both from and to, or neither',
    path: ['from'],
  })
  .refine((p) => !p.from || !p.to || p.from <= p.to, { message: 'from must not be after to', path: ['from'] })
  .refine((p) => (p.auditId === undefined) === (p.cells === undefined), {
    message: 'cells belong to an audit run: give auditId and cells together',
    path: ['cells'],
  });

export interface RecordsAuditResult {
  auditId: number | null;
  /** Cells drawn (a plan) or audited by this job. */
  cells: number;
  /** Jobs a plan fanned out. */
  enqueued: number;
  /** Cells in the population drawn from (a plan). */
  population?: number;
  seed?: string;
  /** What this job's cells found (cell jobs). */
  totals?: AuditTotals;
  /** Why a tick audited nothing. */
  idle?: string;
}

export const recordsAudit = defineJob({
  name: 'records.audit',
  payload: recordsAuditPayload,
  jobId: (p) =>
    p.auditId === undefined || p.cells === undefined
      ? undefined
      : jobKey('records.audit', p.orgId, String(p.auditId), p.cells[0] ? cellId(p.cells[0]) : ''),
  async run(ctx, payload): Promise<RecordsAuditResult> {
    if (payload.auditId !== undefined && payload.cells)
      return auditCells(ctx, payload.orgId, payload.auditId, payload.cells, payload.repair);
    const resources = orderedResources(ctx.org(payload.orgId).resources);
    const seed = payload.seed ?? Math.random().toString(36).slice(2, 10);
    const uniform = seededUniform(seed);
    let planned: {
      cells: AuditCell[];
      population: number;
      strata?: { recent: number; history: number };
      from: string;
      to: string;
      sample: number;
    };
    if (payload.from && payload.to) {
      const users = await ctx.warehouse.listPollableUids(payload.orgId, payload.uids);
      const windows = planDateWindows(payload.from, payload.to);
      const sample = payload.sample ?? 1;
      planned = {
        cells: drawCommandCells(users, resources, windows, sample, uniform),
        population: populationSize(users.length, resources.length, windows.length),
        from: payload.from,
        to: payload.to,
        sample,
      };
    } else {
      const tick = await planTick(ctx, payload.orgId, resources, uniform);
      if ('idle' in tick) return { auditId: null, cells: 0, enqueued: 0, idle: tick.idle };
      planned = { ...tick, sample: 0 };
    }
    const auditId = await ctx.warehouse.startAudit({
      orgId: payload.orgId,
      kind: payload.from ? 'command' : 'schedule',
      rangeFrom: planned.from,
      rangeTo: planned.to,
      sample: planned.sample,
      seed,
      population: planned.population,
      strata: planned.strata ?? null,
      planned: planned.cells.length,
      repair: payload.repair,
      holder: ctx.runHolder,
    });
    let enqueued = 0;
    const per = ctx.settings.audit.cellsPerJob;
    for (let i = 0; i < planned.cells.length; i += per) {
      const cells = planned.cells.slice(i, i + per);
      if (
        await ctx.enqueue('records.audit', { orgId: payload.orgId, auditId, cells, repair: payload.repair })
      )
        enqueued++;
    }
    ctx.log.info(
      { orgId: payload.orgId, auditId, cells: planned.cells.length, population: planned.population, seed },
      'planned audit run',
    );
    return { auditId, cells: planned.cells.length, enqueued, population: planned.population, seed };
  },
});

const cellId = (cell: AuditCell) => `${cell.uid}|${cell.resource}|${cell.startDate}`;

/** The org's resources as v2 names, once each, in the platform's order. */
function orderedResources(configured: readonly string[]): string[] {
  return [...new Set(configured.map(toV2Resource))].sort(
    (a, b) => V2_RESOURCES.indexOf(a) - V2_RESOURCES.indexOf(b),
  );
}

/**
 * A tick's cells: the audit's planned requests for `schedules.auditMinutes`, a simple random sample within
 * each stratum (src/audit/sample-cells.ts, `drawTickCells`), the users drawn by rank and read by rank.
 */
async function planTick(
  ctx: CatalogJobContext,
  orgId: string,
  resources: string[],
  uniform: ReturnType<typeof seededUniform>,
): Promise<
  | {
      cells: AuditCell[];
      population: number;
      strata: { recent: number; history: number };
      from: string;
      to: string;
    }
  | { idle: string }
> {
  const now = Date.now();
  const settings = ctx.settings.audit;
  const budget = await ctx.readBudgetPlan(orgId, now);
  const count = Math.floor((budget.plan.perHour.audit * settings.tickMinutes) / 60);
  if (count < 1) return { idle: 'the budget plan leaves the audit no request this tick' };
  const users = budget.users.pollable;
  if (users === 0) return { idle: 'no users to audit' };
  // What the warehouse is meant to hold: back to its earliest org-wide backfill, else what the recent
  // poll reaches (its lookback and the edge day), which is what a stream-only warehouse holds too.
  const today = new Date(now).toISOString().slice(0, 10);
  const coverageFrom =
    (await ctx.warehouse.auditCoverageStart(orgId)) ??
    new Date(now - (ctx.settings.lookbackDays + EDGE_DAYS) * 86_400_000).toISOString().slice(0, 10);
  const strata = auditStrata(today, settings.lookbackDays, coverageFrom);
  const drawn = drawTickCells(users, resources, strata, count, settings.recentShare, uniform);
  const uids = await ctx.warehouse.pollableUidsAtRanks(
    orgId,
    drawn.map((c) => c.userRank),
  );
  const cells: AuditCell[] = [];
  for (const { userRank, ...cell } of drawn) {
    const uid = uids.get(userRank);
    // A rank past the end: users were removed since the plan counted them.
    if (uid !== undefined) cells.push({ uid, ...cell });
  }
  return {
    cells,
    population: populationSize(users, resources.length, 1 + strata.history.length),
    strata: stratumPopulations(users, resources.length, strata.history.length),
    from: strata.history.at(-1)?.startDate ?? strata.recent.startDate,
    to: strata.recent.endDate,
  };
}

/** A run's cells: each audited and recorded; the ones recorded by an earlier attempt are skipped. */
async function auditCells(
  ctx: CatalogJobContext,
  orgId: string,
  auditId: number,
  cells: AuditCell[],
  repair: boolean,
): Promise<RecordsAuditResult> {
  const { v2 } = ctx.org(orgId);
  const warehouse = ctx.warehouse;
  const done = ctx.attempt > 1 ? await warehouse.auditedCellKeys(auditId) : new Set<string>();
  const totals: AuditTotals = {
    cells: { complete: 0, drift: 0, failed: 0, unsynced: 0 },
    records: { equal: 0, missing: 0, stale: 0, extra: 0, repaired: 0 },
  };
  const deps = {
    fetchRecords: v2.fetchRecords.bind(v2),
    currentVersions: (ids: readonly string[]) => warehouse.currentVersions(orgId, ids),
    liveRecordIds: (uid: string, type: string, from: string, to: string) =>
      warehouse.liveRecordIds(orgId, uid, type, from, to),
    load: (raws: unknown[]) =>
      warehouse.applyBatch(
        { orgId, arrivedVia: 'audit', items: raws.map((raw) => ({ kind: 'record' as const, raw })) },
        {},
        { log: ctx.log },
      ),
    signal: ctx.signal,
  };
  let audited = 0;
  for (const cell of cells) {
    if (done.has(cellId(cell))) continue;
    ctx.signal.throwIfAborted();
    const settledBefore = new Date(Date.now() - ctx.settings.audit.settleMs);
    // A tick judges only what some sync has covered: a cell still to be synced is not drift.
    const result =
      cell.stratum !== 'all' && !(await warehouse.cellSyncCovered(orgId, cell))
        ? unsyncedCell(cell)
        : await auditCell(deps, cell, { repair, settledBefore });
    await warehouse.recordAuditCell(auditId, orgId, result);
    audited++;
    totals.cells[result.outcome] += 1;
    for (const key of ['equal', 'missing', 'stale', 'extra', 'repaired'] as const)
      totals.records[key] += result[key];
    if (result.outcome === 'drift')
      ctx.log.warn(
        { orgId, auditId, ...cell, missing: result.missing, stale: result.stale, extra: result.extra },
        'audit: the warehouse differs from the platform in this cell',
      );
    if (result.unrepaired?.length)
      ctx.log.error(
        { orgId, auditId, ...cell, unrepaired: result.unrepaired },
        'audit: the repair left records that still differ from the platform',
      );
  }
  return { auditId, cells: audited, enqueued: 0, totals };
}

/** A tick's cell whose days no sync has covered yet: recorded, not fetched, not judged. */
function unsyncedCell(cell: AuditCell): AuditedCell {
  return {
    ...cell,
    outcome: 'unsynced',
    platformRecords: 0,
    equal: 0,
    missing: 0,
    stale: 0,
    extra: 0,
    repaired: 0,
    driftIds: [],
  };
}

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'records.audit': { payload: typeof recordsAuditPayload; job: typeof recordsAudit };
  }
}
