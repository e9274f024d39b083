/**
 * Prometheus as its users expect: Node's default metrics under their standard names, our histograms and
 * build info, bounded labels, fleet-wide gauges from one replica at a time (a real Redis lease), and the
 * things to import (deploy/grafana/validic-sync.json, deploy/prometheus/alerts.yml) naming only metrics the
 * worker exports. The alert rules are unit-tested with promtool (CI installs it: .ci/install-promtool).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { holdLease } from '../../src/worker/stream-supervisor.ts';
import { REPO_ROOT } from '../helpers/cli.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

/** Metric names in PromQL text (histogram series suffixes dropped). */
function metricNames(promql: string): string[] {
  return [...promql.matchAll(/\b((?:validic_sync|process|nodejs)_[a-z_]+)/g)].map((m) =>
    m[1]!.replace(/_(bucket|sum|count)$/, ''),
  );
}

function exampleMetrics(isFleetReporter?: () => Promise<boolean>): WorkerMetrics {
  const metrics = createWorkerMetrics({
    queueCounts: async () => ({ waiting: 3 }),
    budgets: async () => [{ orgId: 'org-a', remaining: 17 }],
    quarantine: async () => [{ kind: 'record', items: 2 }],
    reconcileMissed: async () => [{ orgId: 'org-a', missed: 0 }],
    streamStates: () => ({ 'org-a': { '0': 'live' } }),
    ...(isFleetReporter ? { isFleetReporter } : {}),
  });
  metrics.recordRequest({
    method: 'GET',
    host: 'h',
    status: 200,
    durationMs: 120,
    attempt: 1,
    endpoint: 'records',
  });
  metrics.recordRequest({
    method: 'GET',
    host: 'h',
    status: 0,
    durationMs: 5,
    attempt: 2,
    endpoint: 'users',
  });
  metrics.recordLoad(
    { measurement: { inserted: 4, updated: 0, unchanged: 0, stale: 0, quarantined: 0 } },
    new Date(Date.now() - 30_000).toISOString(),
    'stream',
  );
  metrics.recordLoad(
    { blood_oxygen_v9: { inserted: 1, updated: 0, unchanged: 0, stale: 0, quarantined: 0 } },
    null,
    'poll',
  );
  metrics.recordJob('records.recent', 'completed', 1.5);
  metrics.recordSuccess('org-a', 'records.recent');
  metrics.recordTransactionRetry('40P01');
  return metrics;
}

describe('metrics', () => {
  let text: string;
  beforeAll(async () => {
    text = await exampleMetrics().text();
  });

  it('has the standard Node.js and process metrics, unprefixed', () => {
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
      'nodejs_version_info',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).not.toMatch(/^validic_sync_process_/m);
  });

  it('has build info, duration histograms in seconds and bounded labels', () => {
    expect(text).toMatch(/^validic_sync_build_info\{version="\d+\.\d+\.\d+",node="\d+\.\d+\.\d+"\} 1$/m);
    expect(text).toMatch(
      /^validic_sync_http_request_duration_seconds_bucket\{le="0\.25",endpoint="records",status_class="2xx"\} 1$/m,
    );
    expect(text).toMatch(
      /^validic_sync_http_request_duration_seconds_count\{endpoint="users",status_class="none"\} 1$/m,
    );
    expect(text).toMatch(
      /^validic_sync_job_duration_seconds_sum\{name="records\.recent",outcome="completed"\} 1\.5$/m,
    );
    expect(text).toMatch(
      /^validic_sync_last_success_timestamp_seconds\{org="org-a",work="records\.recent"\} \d+/m,
    );
    // A record type outside the known vocabulary folds into `other`.
    expect(text).toContain('validic_sync_records_total{type="other",outcome="inserted"} 1');
    expect(text).not.toContain('blood_oxygen_v9');
  });

  it("counts the loader's transaction retries by SQLSTATE, both codes from the start", () => {
    expect(text).toContain('# TYPE validic_sync_transaction_retries_total counter');
    expect(text).toContain('validic_sync_transaction_retries_total{code="40P01"} 1');
    expect(text).toContain('validic_sync_transaction_retries_total{code="40001"} 0');
  });

  it('has every metric the Grafana dashboard and the alert rules use', () => {
    const panels = dashboardPanels();
    const alerts = parse(read('deploy/prometheus/alerts.yml')) as { groups: { rules: { expr: string }[] }[] };
    const onDashboard = new Set(panels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNames(t.expr))));
    const inAlerts = new Set(alerts.groups.flatMap((g) => g.rules.flatMap((r) => metricNames(r.expr))));
    const used = new Set([...onDashboard, ...inAlerts]);
    expect(used.size).toBeGreaterThan(8);
    const missing = [...used].filter((name) => !text.includes(`# TYPE ${name} `));
    expect(missing).toEqual([]);
    // The completeness audit's metrics are on the dashboard, and its alerts read theirs.
    expect([...onDashboard]).toEqual(
      expect.arrayContaining([
        'validic_sync_audit_cells_total',
        'validic_sync_audit_records_total',
        'validic_sync_audit_completeness_ratio',
        'validic_sync_audit_last_run_timestamp_seconds',
      ]),
    );
    expect([...inAlerts]).toEqual(
      expect.arrayContaining([
        'validic_sync_audit_completeness_ratio',
        'validic_sync_audit_last_run_timestamp_seconds',
      ]),
    );
  });

  it('lays the dashboard out with unique panel ids and no overlapping panels', () => {
    const ids = dashboardPanels().map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    // A collapsed row's panels sit below it only when it is open: the top level is what must not overlap.
    const panels = dashboardPanels(false);
    for (const [i, a] of panels.entries()) {
      expect(a.gridPos.x + a.gridPos.w, `panel ${a.id}`).toBeLessThanOrEqual(24);
      for (const b of panels.slice(i + 1)) {
        const overlap =
          a.gridPos.x < b.gridPos.x + b.gridPos.w &&
          b.gridPos.x < a.gridPos.x + a.gridPos.w &&
          a.gridPos.y < b.gridPos.y + b.gridPos.h &&
          b.gridPos.y < a.gridPos.y + a.gridPos.h;
        expect(overlap, `panels ${a.id} and ${b.id}`).toBe(false);
      }
    }
  });
});

interface DashboardPanel {
  id: number;
  type: string;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { expr: string }[];
  /** A collapsed row's panels. */
  panels?: DashboardPanel[];
}

/** The dashboard's panels, with those of collapsed rows unless `nested` is false. */
function dashboardPanels(nested = true): DashboardPanel[] {
  const dashboard = JSON.parse(read('deploy/grafana/validic-sync.json')) as { panels: DashboardPanel[] };
  return dashboard.panels.flatMap((p) => [p, ...(nested ? (p.panels ?? []) : [])]);
}

describe('fleet-wide gauges', () => {
  let testRedis: TestRedis;
  let redis: Redis;
  beforeAll(() => {
    testRedis = createTestRedis('metrics-reporter');
    redis = testRedis.connect();
  });
  afterAll(async () => {
    await testRedis.cleanup();
  });

  it('are exported by one replica of a fleet, and by another once its lease lapses', async () => {
    const key = `${testRedis.prefix}metrics-reporter`;
    const replica = (owner: string, ttlMs: number) =>
      exampleMetrics(() => holdLease(redis, key, owner, ttlMs));
    const first = await replica('a', 60_000).text();
    const second = await replica('b', 60_000).text();
    expect(first).toContain('validic_sync_queue_jobs{state="waiting"} 3');
    expect(first).toContain('validic_sync_request_budget_remaining{org="org-a"} 17');
    expect(second).not.toMatch(/^validic_sync_queue_jobs\{/m);
    expect(second).not.toMatch(/^validic_sync_request_budget_remaining\{/m);
    // Per-process metrics stay on every replica.
    expect(second).toContain('validic_sync_stream_connections{org="org-a",state="live"} 1');
    await redis.pexpire(key, 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await replica('b', 60_000).text()).toContain('validic_sync_queue_jobs{state="waiting"} 3');
  });
});

const promtool = [
  process.env.PROMTOOL,
  join(homedir(), '.cache/validic-sync/promtool/usr/bin/promtool'),
  'promtool',
].find(
  (path) =>
    path && (path === 'promtool' ? spawnSync('promtool', ['--version']).status === 0 : existsSync(path)),
);

describe('alert rules', () => {
  // CI installs promtool (.ci/install-promtool); a developer machine without it skips only this test.
  it.skipIf(!promtool && process.env.CI !== 'true')('pass their promtool unit tests', () => {
    expect(promtool, 'promtool not found: run .ci/install-promtool').toBeDefined();
    const dir = join(REPO_ROOT, 'deploy/prometheus');
    const check = spawnSync(promtool!, ['check', 'rules', 'alerts.yml'], { cwd: dir, encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    const run = spawnSync(promtool!, ['test', 'rules', 'alerts.test.yml'], { cwd: dir, encoding: 'utf8' });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('SUCCESS');
  });
});
