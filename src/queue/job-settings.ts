/**
 * The few config values jobs read, cut from the config once per process (`runtime.jobContext`): a job
 * sees these and not the whole config (no URLs, tokens or other jobs' settings). A job that needs
 * another value gets a field here, with the config key it comes from.
 */
import type { Config } from '../config/schema.ts';
import { type LegacyWindowSettings, legacyWindowSettings } from '../legacy/legacy-window-settings.ts';

export interface JobSettings {
  /** `sync.lookbackDays`: days the recent poll and legacy.sync (without a cursor) look back. */
  lookbackDays: number;
  /** `sync.newUserHistoryDays`: history users.sync backfills for users new since its last listing. */
  newUserHistoryDays: number;
  /** `schedules.reconcileDays`: days connections.recent reconciles. */
  reconcileDays: number;
  /** `sync.legacyWindowHours` / `sync.legacyOverlapMinutes`: legacy latest windows. */
  legacyWindow: LegacyWindowSettings;
  /** `budget.tickSeconds` in ms: the records.recent tick. */
  tickMs: number;
  /** `push.retentionDays`: push.prune deletes stored push bodies older than this. */
  pushRetentionDays: number;
  /**
   * push.drain: `push.coalesceSeconds` in ms and `push.maxItems` (items per part), to resume a cut-off
   * notification as the endpoint would have processed it; its legacy `latest` margin (the overlap, at
   * least a minute); and the organizations' ids, to route the items of a shared-secret notification.
   */
  push: {
    coalesceMs: number;
    partItems: number;
    updatedMarginMs: number;
    organizations: { orgId: string; legacyOrgId?: string }[];
  };
  /** `warehouse.partitionMonthsAhead` and `warehouse.rawRetentionMonths`: warehouse.maintain. */
  partitionMonthsAhead: number;
  rawRetentionMonths: number;
  /**
   * records.audit (src/audit/README.md): `audit.lookbackDays`, `audit.recentShare`, `audit.settleMinutes`
   * in ms, `audit.cellsPerJob`, and `schedules.auditMinutes` (a tick audits that many minutes' share).
   */
  audit: {
    lookbackDays: number;
    recentShare: number;
    settleMs: number;
    cellsPerJob: number;
    tickMinutes: number;
  };
}

export function jobSettings(config: Config): JobSettings {
  return {
    lookbackDays: config.sync.lookbackDays,
    newUserHistoryDays: config.sync.newUserHistoryDays,
    reconcileDays: config.schedules.reconcileDays,
    legacyWindow: legacyWindowSettings(config),
    tickMs: config.budget.tickSeconds * 1000,
    pushRetentionDays: config.push.retentionDays,
    push: {
      coalesceMs: config.push.coalesceSeconds * 1000,
      partItems: config.push.maxItems,
      updatedMarginMs: Math.max(legacyWindowSettings(config).overlapMs, 60_000),
      organizations: config.organizations.map((o) => ({
        orgId: o.orgId,
        ...(o.legacyOrgId ? { legacyOrgId: o.legacyOrgId } : {}),
      })),
    },
    partitionMonthsAhead: config.warehouse.partitionMonthsAhead,
    rawRetentionMonths: config.warehouse.rawRetentionMonths,
    audit: {
      lookbackDays: config.audit.lookbackDays,
      recentShare: config.audit.recentShare,
      settleMs: config.audit.settleMinutes * 60_000,
      cellsPerJob: config.audit.cellsPerJob,
      tickMinutes: config.schedules.auditMinutes,
    },
  };
}
