/**
 * The worker's Prometheus metrics (prom-client, own registry), named as Prometheus users expect:
 * Node's and the process's default metrics under their standard names (`process_*`, `nodejs_*`, so the
 * usual Node.js dashboards work), ours under `validic_sync_*`, durations as histograms in seconds, and
 * `validic_sync_build_info`. Event metrics are pushed by the worker (requests, loads, jobs, stream state);
 * gauges that mirror state elsewhere are read at scrape time through `sources`. The fleet-wide ones
 * (queue depths, request budget) are exported by one replica of a fleet at a time (`isFleetReporter`),
 * so summing over replicas does not multiply them. Label values are bounded: org ids, job names,
 * endpoint kinds, status classes, and record types of the known vocabulary (others fold into `other`);
 * never a token, a URL or a user id.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { BudgetStatus } from '../budget/read-budget-plan.ts';
import { CONFLICT_CODES } from '../errors/index.ts';
import type { RequestEvent } from '../http/http-client-types.ts';
import type { LoadCounts } from '../pipeline/batch.ts';
import { VERSION } from '../runtime/version.ts';
import { STREAM_STATES } from '../stream/consumer-machine.ts';
import type { PlatformClockReading } from '../time/platform-clock.ts';
import { LEGACY_OBJECTS, recordTypeOf, V2_RESOURCES } from '../validic/platform-limits.ts';
import { type AuditMetricsRow, registerAuditMetrics } from './audit-status.ts';
import { oncePerScrape, scrapedGauge } from './scraped-metrics.ts';

/** Record types (and load kinds) that are label values as they are; any other becomes `other`. */
const KNOWN_TYPES = new Set<string>([
  ...V2_RESOURCES.map(recordTypeOf),
  ...['user', 'connection_event', 'record', 'legacy', 'frame', 'unparseable'],
  ...LEGACY_OBJECTS.map((object) => `legacy:${object}`),
]);
export const typeLabel = (type: string): string => (KNOWN_TYPES.has(type) ? type : 'other');

/** `2xx` … `5xx`, or `none` when no answer came. */
export const statusClass = (status: number): string =>
  status > 0 ? `${Math.floor(status / 100)}xx` : 'none';

export interface MetricSources {
  queueCounts?: () => Promise<Record<string, number>>;
  /** Whole tokens left in each org's request budget. */
  budgets?: () => Promise<{ orgId: string; remaining: number }[]>;
  /** Requests per hour each org's budget grants now (lowered on 429s) beside the configured rate. */
  grantedRates?: () => Promise<{ orgId: string; grantedPerHour: number; configuredPerHour: number }[]>;
  /** The platform's clock as this process knows it (src/time/platform-clock.ts). */
  platformClock?: () => PlatformClockReading;
  /** Distinct quarantined items by kind. */
  quarantine?: () => Promise<{ kind: string; items: number }[]>;
  /** Connection events the last reconciliation found missing, per org. */
  reconcileMissed?: () => Promise<{ orgId: string; missed: number }[]>;
  /** The stream's open gaps and what the reconciliation stream's passes found missing, per org. */
  reconciliation?: () => Promise<ReconciliationMetricsRow[]>;
  /** The completeness audit per org (audit-status.ts). */
  audit?: () => Promise<AuditMetricsRow[]>;
  /** Each configured org's request budget plan (status's `budget`). */
  budgetPlans?: () => Promise<{ orgId: string; budget: BudgetStatus }[]>;
  /** State of each stream connection of this process, by org (`waiting_slot` while it waits for a slot). */
  streamStates?: () => Record<string, Record<string, string>>;
  /** Whether this replica exports the fleet-wide gauges now; absent = always (a lone process). */
  isFleetReporter?: () => Promise<boolean>;
}

/** One org's gaps and reconciliation passes, as their gauges show them. */
export interface ReconciliationMetricsRow {
  orgId: string;
  openGaps: number;
  missed24h: number;
  missed7d: number;
  lastPassAt: number | null;
  lastPassOutcome: string | null;
}

/** The gauge's states: a connection's (src/stream/STATE-MACHINE.md) and the wait for a fleet slot before it has one. */
const GAUGE_STREAM_STATES = ['waiting_slot', ...STREAM_STATES] as const;

export interface WorkerMetrics {
  registry: Registry;
  recordRequest(event: RequestEvent): void;
  /** Counts of one committed batch (or job) per record type, and its newest platform `created_at`. */
  recordLoad(
    byType: Record<string, LoadCounts> | undefined,
    newestCreatedAt: string | null | undefined,
    via: string,
    committedAt?: number,
  ): void;
  recordJob(
    name: string,
    outcome: 'completed' | 'failed' | 'retried' | 'delayed' | 'abandoned',
    durationSeconds?: number,
  ): void;
  /** A kind of work (a job name, `stream`) succeeded for an org just now. */
  recordSuccess(org: string, work: string, at?: number): void;
  /** The loader ran a transaction again after PostgreSQL rolled it back with SQLSTATE `code`. */
  recordTransactionRetry(code: string): void;
  text(): Promise<string>;
  contentType: string;
}

const OUTCOMES = ['inserted', 'updated', 'unchanged', 'stale', 'quarantined'] as const;

/** A collector must never fail a scrape: a source that throws leaves its gauge unset. */
async function quietly<T>(fn: (() => Promise<T>) | undefined): Promise<T | undefined> {
  if (!fn) return undefined;
  try {
    return await fn();
  } catch {
    return undefined;
  }
}

export function createWorkerMetrics(sources: MetricSources = {}): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const fleetReporter = async () => (sources.isFleetReporter ? await quietly(sources.isFleetReporter) : true);

  // The metrics this process sets as things happen; the gauges below them are read at scrape time.
  const gauge = (name: string, help: string, labelNames: string[]) =>
    new Gauge({ name, help, labelNames, registers: [registry] });
  const counter = (name: string, help: string, labelNames: string[]) =>
    new Counter({ name, help, labelNames, registers: [registry] });
  const histogram = (name: string, help: string, labelNames: string[], buckets: number[]) =>
    new Histogram({ name, help, labelNames, buckets, registers: [registry] });

  const buildInfo = gauge(
    'validic_sync_build_info',
    'Always 1; the labels say which validic-sync and Node run',
    ['version', 'node'],
  );
  buildInfo.set({ version: VERSION, node: process.versions.node }, 1);
  const requestDuration = histogram(
    'validic_sync_http_request_duration_seconds',
    'Duration of each HTTP attempt to the platform, by endpoint kind and status class',
    ['endpoint', 'status_class'],
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  const jobDuration = histogram(
    'validic_sync_job_duration_seconds',
    'Duration of job executions, by job name and outcome',
    ['name', 'outcome'],
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
  );
  const lastSuccess = gauge(
    'validic_sync_last_success_timestamp_seconds',
    'When each kind of work (job name, or stream) last succeeded for an org, Unix seconds',
    ['org', 'work'],
  );

  const records = counter(
    'validic_sync_records_total',
    'Items applied to the warehouse, by record type and outcome',
    ['type', 'outcome'],
  );
  const requests = counter(
    'validic_sync_http_requests_total',
    'HTTP attempts to the platform, by method and status (0 = no answer)',
    ['method', 'status'],
  );
  const lag = histogram(
    'validic_sync_commit_lag_seconds',
    'Time from the platform created_at of the newest record of a batch to its commit, by arrival path',
    ['via'],
    [1, 5, 15, 60, 300, 900, 3600, 6 * 3600, 86_400, 7 * 86_400, 30 * 86_400],
  );
  const jobs = counter('validic_sync_jobs_total', 'Job executions by job name and outcome', [
    'name',
    'outcome',
  ]);
  const transactionRetries = counter(
    'validic_sync_transaction_retries_total',
    'Loader transactions run again after PostgreSQL rolled them back, by SQLSTATE (40P01 deadlock detected, 40001 serialization failure, 55P03 a lock not granted within the lock timeout)',
    ['code'],
  );
  // Both codes from the start, so that rate() and increase() see the first retry.
  for (const code of CONFLICT_CODES) transactionRetries.inc({ code }, 0);
  /** A fleet-wide gauge read at scrape time: the same for every replica, so one replica at a time exports it. */
  const fleetGauge = (name: string, help: string, labelNames: string[], read: (gauge: Gauge) => unknown) =>
    scrapedGauge(registry, name, help, labelNames, async (gauge) => {
      if (await fleetReporter()) await read(gauge);
    });

  scrapedGauge(
    registry,
    'validic_sync_stream_connections',
    'Stream connections of this process by org and state',
    ['org', 'state'],
    (g) => {
      for (const [org, connections] of Object.entries(sources.streamStates?.() ?? {})) {
        const counts = new Map<string, number>(GAUGE_STREAM_STATES.map((s) => [s, 0]));
        for (const state of Object.values(connections)) counts.set(state, (counts.get(state) ?? 0) + 1);
        for (const [state, n] of counts) g.set({ org, state }, n);
      }
    },
  );
  fleetGauge(
    'validic_sync_queue_jobs',
    'Jobs in the BullMQ queue by state (fleet-wide)',
    ['state'],
    async (g) => {
      for (const [state, n] of Object.entries((await quietly(sources.queueCounts)) ?? {}))
        g.set({ state }, n);
    },
  );
  fleetGauge(
    'validic_sync_request_budget_remaining',
    'Whole requests left now in the (fleet-shared) request budget of each org',
    ['org'],
    async (g) => {
      for (const { orgId, remaining } of (await quietly(sources.budgets)) ?? [])
        g.set({ org: orgId }, remaining);
    },
  );
  fleetGauge(
    'validic_sync_request_budget_granted_per_hour',
    'Requests per hour the request budget of each org grants now: the configured usable rate (what="configured"), lowered on 429s and raised on success (what="granted")',
    ['org', 'what'],
    async (g) => {
      for (const rate of (await quietly(sources.grantedRates)) ?? []) {
        g.set({ org: rate.orgId, what: 'granted' }, rate.grantedPerHour);
        g.set({ org: rate.orgId, what: 'configured' }, rate.configuredPerHour);
      }
    },
  );
  scrapedGauge(
    registry,
    'validic_sync_platform_clock_offset_seconds',
    "The platform's clock minus this process's, seconds, from the Date of every answer and the streams' pokes (absent until the platform has answered)",
    [],
    (g) => {
      const reading = sources.platformClock?.();
      if (reading?.observedAt !== undefined) g.set(reading.offsetMs / 1000);
    },
  );
  scrapedGauge(
    registry,
    'validic_sync_quarantine_items',
    'Distinct items in quarantine, by kind',
    ['kind'],
    async (g) => {
      for (const { kind, items } of (await quietly(sources.quarantine)) ?? []) g.set({ kind }, items);
    },
  );
  scrapedGauge(
    registry,
    'validic_sync_reconcile_missed',
    'Connection events the last reconciliation found missing from the warehouse, per org',
    ['org'],
    async (g) => {
      for (const { orgId, missed } of (await quietly(sources.reconcileMissed)) ?? [])
        g.set({ org: orgId }, missed);
    },
  );

  /** Gauges set from each row of one source, which a scrape reads once for all of them. */
  const gaugesOfRows =
    <Row>(rows: () => Promise<Row[] | undefined>) =>
    (name: string, help: string, labelNames: string[], set: (gauge: Gauge, row: Row) => void) =>
      scrapedGauge(registry, name, help, labelNames, async (gauge) => {
        for (const row of (await rows()) ?? []) set(gauge, row);
      });

  // The stream's gaps and the reconciliation stream's passes.
  const reconciliationGauge = gaugesOfRows(oncePerScrape(() => quietly(sources.reconciliation)));
  reconciliationGauge(
    'validic_sync_stream_gaps_open',
    'Spans in which the stream may have lost events (unclean ends, replays that could not fill theirs) that no reconciliation pass has covered yet, per org',
    ['org'],
    (g, r) => g.set({ org: r.orgId }, r.openGaps),
  );
  reconciliationGauge(
    'validic_sync_reconcile_stream_missed',
    'Record versions and connection events the reconciliation stream re-delivered that the warehouse held nowhere: what the primary stream missed, per org, over the last 24 h or 7 d',
    ['org', 'window'],
    (g, r) => {
      g.set({ org: r.orgId, window: '24h' }, r.missed24h);
      g.set({ org: r.orgId, window: '7d' }, r.missed7d);
    },
  );
  reconciliationGauge(
    'validic_sync_reconcile_stream_last_pass_timestamp_seconds',
    'When the last pass of the reconciliation stream started, per org and how it ended',
    ['org', 'outcome'],
    (g, r) => {
      if (r.lastPassAt !== null)
        g.set({ org: r.orgId, outcome: r.lastPassOutcome ?? 'unknown' }, r.lastPassAt / 1000);
    },
  );

  registerAuditMetrics(registry, () => quietly(sources.audit), fleetReporter);

  // The plan is the same for every replica of a fleet: one of them exports it.
  const budgetPlans = oncePerScrape(() => quietly(sources.budgetPlans));
  const budgetGauge = gaugesOfRows(async () => ((await fleetReporter()) ? budgetPlans() : undefined));
  budgetGauge(
    'validic_sync_budget_requests_per_hour',
    'The request budget of each org per hour: the configured limit, and what the pacing grants (usable)',
    ['org', 'what'],
    (g, { orgId: org, budget: b }) => {
      g.set({ org, what: 'limit' }, b.requestsPerHour);
      g.set({ org, what: 'usable' }, b.usablePerHour);
    },
  );
  // What the plan gives each kind of work: requests per hour, and the share of the usable rate.
  for (const [name, help, given] of [
    [
      'validic_sync_budget_planned_requests_per_hour',
      'Requests per hour the budget plan gives each kind of work (stream, pushAndReconcile, recent, backfill)',
      'perHour',
    ],
    [
      'validic_sync_budget_share',
      'Share of the usable request rate the budget plan gives each kind of work',
      'shares',
    ],
  ] as const)
    budgetGauge(name, help, ['org', 'kind'], (g, { orgId: org, budget: b }) => {
      for (const [kind, n] of Object.entries(b[given])) g.set({ org, kind }, n);
    });
  budgetGauge(
    'validic_sync_recent_sweep_seconds',
    'Recent-poll sweep period of active and dormant users: configured, and planned from the budget (+Inf: never)',
    ['org', 'users', 'period'],
    (g, { orgId: org, budget: b }) => {
      const r = b.recentPoll;
      const inf = (n: number | null) => n ?? Number.POSITIVE_INFINITY;
      g.set({ org, users: 'active', period: 'configured' }, r.configuredSeconds);
      g.set({ org, users: 'active', period: 'planned' }, inf(r.plannedSeconds));
      g.set({ org, users: 'dormant', period: 'configured' }, r.configuredDormantSeconds);
      g.set({ org, users: 'dormant', period: 'planned' }, inf(r.plannedDormantSeconds));
      if (r.oldestActivePollSeconds !== null)
        g.set({ org, users: 'active', period: 'oldest_poll' }, r.oldestActivePollSeconds);
    },
  );

  budgetGauge(
    'validic_sync_recent_poll_active',
    'Whether the recent REST poll runs now (1) or not (0), by mode: fallback polls only while the stream is unheard',
    ['org', 'mode'],
    (g, { orgId: org, budget: b }) => g.set({ org, mode: b.recentPoll.mode }, b.recentPoll.polling ? 1 : 0),
  );
  budgetGauge(
    'validic_sync_first_sync_running',
    "Whether the org's first sync runs (1): users are still being polled for what was created before its stream began",
    ['org'],
    (g, { orgId: org, budget: b }) => g.set({ org }, b.recentPoll.firstSync ? 1 : 0),
  );
  budgetGauge(
    'validic_sync_stream_last_heard_seconds',
    "Seconds since the org's primary stream was last heard from (any connection, any process)",
    ['org'],
    (g, { orgId: org, budget: b }) => {
      if (b.recentPoll.streamLastHeardSeconds !== null) g.set({ org }, b.recentPoll.streamLastHeardSeconds);
    },
  );
  budgetGauge(
    'validic_sync_push_fetches',
    'Push-triggered fetches in the durable queue by state: pending (of them due), queued as jobs, failed',
    ['org', 'state'],
    (g, { orgId: org, budget: b }) => {
      if (!b.push) return;
      for (const state of ['pending', 'due', 'queued', 'failed'] as const)
        g.set({ org, state }, b.push[state]);
    },
  );
  budgetGauge(
    'validic_sync_push_backlog_age_seconds',
    'Age of the oldest pending push fetch (0 when none waits): how far push is behind',
    ['org'],
    (g, { orgId: org, budget: b }) => {
      if (b.push) g.set({ org }, b.push.oldestPendingSeconds ?? 0);
    },
  );

  return {
    registry,
    contentType: registry.contentType,
    recordRequest(event) {
      requests.inc({ method: event.method, status: String(event.status) });
      requestDuration.observe(
        { endpoint: event.endpoint ?? 'other', status_class: statusClass(event.status) },
        event.durationMs / 1000,
      );
    },
    recordLoad(byType, newestCreatedAt, via, committedAt = Date.now()) {
      for (const [type, counts] of Object.entries(byType ?? {})) {
        for (const outcome of OUTCOMES) {
          const n = counts[outcome];
          if (n > 0) records.inc({ type: typeLabel(type), outcome }, n);
        }
      }
      if (newestCreatedAt) {
        const created = Date.parse(newestCreatedAt);
        if (Number.isFinite(created)) lag.observe({ via }, Math.max(0, (committedAt - created) / 1000));
      }
    },
    recordJob(name, outcome, durationSeconds) {
      jobs.inc({ name, outcome });
      if (durationSeconds !== undefined) jobDuration.observe({ name, outcome }, durationSeconds);
    },
    recordSuccess(org, work, at = Date.now()) {
      lastSuccess.set({ org, work }, at / 1000);
    },
    recordTransactionRetry(code) {
      // Bounded: the conflict codes, anything else (never sent by the loader) as `other`.
      transactionRetries.inc({ code: CONFLICT_CODES.has(code) ? code : 'other' });
    },
    text: () => registry.metrics(),
  };
}
