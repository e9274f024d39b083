/**
 * A population over a simulated day: the sandbox holds `--users` users with today's history so far,
 * a seeded feed (helpers/population-feed.ts) releases what such a population does (new records, late
 * syncs, changes, deletions, connection events, legacy records with their push, new users), and two
 * real `validic-sync worker` processes (BullMQ on Redis) keep a fresh warehouse in step with streams,
 * the reconciliation stream, the scheduled audit, push and the schedules on.
 *
 * Acceleration without touching the worker's clock: every RATE is multiplied by `--accelerate` A,
 * every INTERVAL divided by it. The worker's requests per hour are 2,000 × A; the sandbox answers 429
 * beyond 2,000 requests per fixed window of 3,600 ÷ A s of its clock (the platform's hour, compressed:
 * the `requestBudget` fault); schedules' minutes and `budget.tickSeconds` are ÷ A (the tick no
 * shorter than 2 real seconds; `budget.streamFallbackMinutes` unscaled and the audit's settle time
 * not below a real minute, see the config below); the feed releases users × events per user per day
 * ÷ 86,400 × A events per real second; `--hours` H simulated hours take H × 3,600 ÷ A real seconds.
 * Times the worker takes (freshness) are reported × A as simulated time, and the raw real seconds
 * beside them. Stream timing (pokes every 5 s, staleness, backoff) is the connection's own and is
 * not scaled. Defaults: A = 144 over 24 h below 100,000 users, A = 24 over 4 h from 100,000 (the
 * sandbox's feed tops out near 600 events/s on a core).
 *
 * History: the sandbox generates today's records up to the start (days: 1, eager, in memory: at
 * 100,000 users ≈ 240,000 records, ≈ 2.8 GB and 50–100 s to build here). One worker with the stream
 * alone catches it up first (the bench creates the primary stream with `start_date` yesterday: a
 * record of today may have been created yesterday evening; the worker finds its stream by name), then
 * two workers with everything on run the measured span. Nothing in the worker backfills new users by
 * itself (jobs/ has no automatic records.backfill); the feed's new users have no history, so their
 * records arrive by the stream like everyone's.
 *
 * The sandbox keeps its users listing sorted between changes of its users (it used to sort every user
 * on every page: 13 minutes per listing at 100,000 users, starving this feed). At 100,000 users the
 * sandbox's memory grows past Node's default heap over a simulated day: the default run gives each size
 * a child with `--max-old-space-size=12000`; run `--users 100000` the same way
 * (`node --max-old-space-size=12000 bench/population.ts --users 100000 --accelerate 48 --hours 24`).
 *
 * Run: `node bench/population.ts` (10,000 then 100,000 users, each in its own child process),
 * `node bench/population.ts --users 10000 --accelerate 144 --hours 24`, `--quick` (2,000 users, 2 h).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { NODE_HEAP_FLAGS } from '../src/runtime/heap-flags.ts';
import { type Sandbox, startSandbox } from '../src/sandbox/index.ts';
import { runCli, sandboxEnv, spawnCli } from '../test/helpers/cli.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { createTestRedis, TEST_REDIS_URL } from '../test/helpers/redis.ts';
import { PopulationFeed } from './helpers/population-feed.ts';
import { compareWithTruthInSql, type TruthComparison } from './helpers/population-truth.ts';
import { printFigure, quick, round } from './helpers/report.ts';

const PLATFORM_REQUESTS_PER_HOUR = 2_000;
const PEAK_RSS_TARGET_MB = 300;
const FRESHNESS_P99_TARGET_S = 3_600;
/** The shortest real tick (records.recent, push.drain) whatever A. */
const TICK_FLOOR_SECONDS = 2;
/** The production tick (`budget.tickSeconds`): a tick's work is compared with it, unscaled. */
const PRODUCTION_TICK_SECONDS = 60;

function option(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

const usersOption = option('users');
const accelerateOption = option('accelerate');
const hours = option('hours') ?? (quick ? 2 : undefined);
const seed = option('seed') ?? 11;

/** The figure names' size tag: 10k, 100k, 2k. */
function tag(users: number): string {
  return users % 1000 === 0 ? `${users / 1000}k` : String(users);
}

interface WorkerProcess {
  pid: number;
  url: string;
  pushUrl: string | undefined;
  stop(): Promise<void>;
  exited: Promise<{ code: number | null; signal: string | null; stderr: string }>;
}

/** A `validic-sync worker` child with the heap flags every launcher passes; resolves once it serves HTTP. */
async function startWorker(env: NodeJS.ProcessEnv): Promise<WorkerProcess> {
  const child = spawnCli(['worker'], env, { nodeArgs: NODE_HEAP_FLAGS });
  let stdout = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const match = /worker listening on (\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.result.then((r) => reject(new Error(`worker exited (${r.code ?? r.signal}): ${r.stderr}`)));
  });
  return {
    pid: child.pid!,
    url,
    pushUrl: /push endpoint on (\S+)/.exec(stdout)?.[1],
    exited: child.result,
    async stop() {
      child.kill('SIGTERM');
      await child.result;
    },
  };
}

async function vmHwmMb(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Mean, count and sum of `validic_sync_job_duration_seconds` per job name, over both workers. */
async function jobDurations(urls: string[]): Promise<Record<string, { count: number; sum: number }>> {
  const out: Record<string, { count: number; sum: number }> = {};
  for (const url of urls) {
    const text = await fetch(`${url}/metrics`)
      .then((r) => r.text())
      .catch(() => '');
    for (const line of text.split('\n')) {
      const m = /^validic_sync_job_duration_seconds_(sum|count)\{([^}]*)\} (\S+)/.exec(line);
      if (!m) continue;
      const name = /name="([^"]+)"/.exec(m[2]!)?.[1] ?? '?';
      const entry = out[name] ?? { count: 0, sum: 0 };
      out[name] = entry;
      entry[m[1] as 'sum' | 'count'] += Number(m[3]);
    }
  }
  return out;
}

async function createPrimaryStream(sandbox: Sandbox, name: string, day: string): Promise<void> {
  const response = await fetch(`${sandbox.streamsUrl}/streams?token=${sandbox.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, start_date: day }),
  });
  if (response.status !== 201)
    throw new Error(`stream not created: ${response.status} ${await response.text()}`);
}

async function storedRecordCount(databaseUrl: string, orgId: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const r = await client.query<{ n: number }>(
      'select count(*)::int as n from validic.records where org_id = $1',
      [orgId],
    );
    return r.rows[0]!.n;
  } finally {
    await client.end();
  }
}

/**
 * The first sync (src/budget/first-sync.ts) marked complete: the catch-up loaded the whole history through
 * the stream's backlog (created with `start_date` yesterday, and the sandbox holds only today), which the
 * worker cannot know. Without this the run would spend its recent share re-polling every user over the
 * lookback (70,000 requests at 10,000 users: longer than the simulated day), and the scheduled audit,
 * which waits for the first sync, would never sample.
 */
async function markFirstSyncComplete(databaseUrl: string, orgId: string, streamName: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `insert into validic_sync.first_syncs (org_id, stream_name, completed_at) values ($1, $2, now())
        on conflict (org_id, stream_name) do update set completed_at = now()`,
      [orgId, streamName],
    );
  } finally {
    await client.end();
  }
}

/** Stream gaps by reason: how many were recorded, how many no reconciliation pass has covered yet. */
async function streamGaps(
  databaseUrl: string,
  orgId: string,
  since: Date,
): Promise<{
  open: number;
  openSince: number;
  byReason: Record<string, { recorded: number; open: number }>;
}> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const r = await client.query<{ reason: string; recorded: number; open: number; open_since: number }>(
      `select reason, count(*)::int as recorded, count(*) filter (where covered_at is null)::int as open,
         count(*) filter (where covered_at is null and recorded_at >= $2)::int as open_since
       from validic_sync.stream_gaps where org_id = $1 group by reason order by reason`,
      [orgId, since],
    );
    return {
      open: r.rows.reduce((n, g) => n + g.open, 0),
      openSince: r.rows.reduce((n, g) => n + g.open_since, 0),
      byReason: Object.fromEntries(r.rows.map((g) => [g.reason, { recorded: g.recorded, open: g.open }])),
    };
  } finally {
    await client.end();
  }
}

/**
 * What autovacuum would do, where the server has it off (this machine's PostgreSQL does): ANALYZE the
 * warehouse every minute. Without statistics the planner takes the fresh tables for empty, and the
 * budget plan's counts (readBudgetPlan) became a nested loop over every record per user: measured
 * 6 min 41 s per tick at 10,019 users. The worker now gives never-analyzed tables their first statistics
 * itself (analyzeNewTables, src/warehouse/warehouse-upkeep.ts, each records.recent tick), so
 * `--no-analyze` shows the worker alone: 0.70 s per tick at 100,000 users (bench/RESULTS.md). This stand-in
 * keeps the statistics fresh as the tables grow, as autovacuum would in production.
 */
async function standInAutovacuum(
  databaseUrl: string,
): Promise<{ stop(): Promise<void>; runs: () => number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const setting = (await client.query<{ autovacuum: string }>('show autovacuum')).rows[0]!.autovacuum;
  let runs = 0;
  let running: Promise<unknown> = Promise.resolve();
  const analyze = () => {
    running = client.query('analyze').then(() => runs++);
    return running;
  };
  const off = setting === 'off' && !process.argv.includes('--no-analyze');
  if (off) await analyze();
  const timer = off ? setInterval(() => void analyze().catch(() => {}), 60_000) : undefined;
  return {
    runs: () => runs,
    async stop() {
      if (timer) clearInterval(timer);
      await running.catch(() => {});
      await client.end();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function runSize(users: number, A: number, simulatedHours: number): Promise<void> {
  const name = `population-${tag(users)}`;
  const runSeconds = (simulatedHours * 3600) / A;
  const windowSeconds = 3600 / A;
  const loadAtStart = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');

  const buildStarted = Date.now();
  const sandbox = await startSandbox({ seed, users, days: 1, now: new Date() });
  const buildSeconds = (Date.now() - buildStarted) / 1000;
  const sandboxHeapMb = process.memoryUsage().heapUsed / 1e6;
  const historyRecords = sandbox.truth.records().length;
  // From yesterday: a record of today's history may have been created (synced) yesterday evening.
  const yesterday = new Date(Date.parse(sandbox.control.now()) - 86_400_000).toISOString().slice(0, 10);
  await createPrimaryStream(sandbox, 'validic-sync', yesterday);
  // The platform's hour, compressed: 2,000 requests per fixed window of 3,600 ÷ A s (sandbox clock).
  sandbox.control.setFaults({
    requestBudget: { limit: PLATFORM_REQUESTS_PER_HOUR, windowMs: (3_600_000 / A) | 0 },
  });

  const db = await createTestDatabase();
  const redis = createTestRedis(`population-${randomUUID().slice(0, 8)}`);
  const configDir = await mkdtemp(join(tmpdir(), 'validic-population-'));
  const configFile = join(configDir, 'config.json');
  const minutes = (m: number) => m / A;
  await writeFile(
    configFile,
    JSON.stringify({
      schedules: {
        usersSyncMinutes: minutes(60),
        recentPollMinutes: minutes(60),
        reconcileStreamMinutes: minutes(60),
        reconcileMinutes: minutes(1440),
        auditMinutes: minutes(60),
        legacyLatestMinutes: minutes(15),
      },
      budget: {
        // At least 2 real seconds: a tick's own database work does not shrink with A (0.4 s at 2,000
        // users here), and ticks every 0.4 s would make the acceleration itself the load.
        tickSeconds: Math.max(60 / A, TICK_FLOOR_SECONDS),
        dormantPollMinutes: minutes(1440),
        // Not scaled: a live stream is "heard" about once a real minute (its pokes and commits), so a
        // fallback ÷ A would find every healthy stream unheard and poll all the time.
      },
      // Not below a real minute: the audit leaves out versions the stream may still be delivering, and
      // the stream's real latency (seconds) does not shrink with A.
      audit: { settleMinutes: Math.max(minutes(10), 1) },
      stream: { passAfterGapSeconds: Math.max(1, Math.round(60 / A)) },
    }),
  );
  const env = sandboxEnv(sandbox, {
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    VALIDIC_REDIS_PREFIX: redis.prefix.slice(0, -1),
    VALIDIC_SYNC_CONFIG: configFile,
    HTTP_PORT: '0',
    PUSH_PORT: '0',
    VALIDIC_SCHEDULES: 'true',
    VALIDIC_WORKER_STREAMS: 'true',
    VALIDIC_REQUESTS_PER_HOUR: String(PLATFORM_REQUESTS_PER_HOUR * A),
    VALIDIC_APPLICATION_SECRET: sandbox.applicationSecret,
    PUSH_SECRET: 'population-push-secret-0123456789',
    PUSH_RATE_PER_MINUTE: String(1200 * A),
    PUSH_COALESCE_SECONDS: String(Math.round(10 / A)),
  });

  const workers: WorkerProcess[] = [];
  const samples: { t: number; total: number; limited: number }[] = [];
  let peakRss = [0, 0];
  let sampler: NodeJS.Timeout | undefined;
  const feed = new PopulationFeed(sandbox, { seed });
  let catchUpSeconds = 0;
  let catchUpRssMb = 0;
  let runStarted = new Date();
  let analyzer: Awaited<ReturnType<typeof standInAutovacuum>> | undefined;
  try {
    // Catch-up: one worker with the stream alone loads the history (as a backfill would), so the run
    // measures the steady state and the audit does not sample a warehouse still being filled.
    const catchUpStarted = Date.now();
    const catchUp = await startWorker({ ...env, VALIDIC_SCHEDULES: 'false' });
    workers.push(catchUp);
    const catchUpLimit = catchUpStarted + 900_000;
    while ((await storedRecordCount(db.url, sandbox.orgId)) < historyRecords && Date.now() < catchUpLimit)
      await sleep(2000);
    catchUpRssMb = await vmHwmMb(catchUp.pid);
    await catchUp.stop();
    await markFirstSyncComplete(db.url, sandbox.orgId, 'validic-sync');
    analyzer = await standInAutovacuum(db.url);
    workers.length = 0;
    catchUpSeconds = (Date.now() - catchUpStarted) / 1000;
    runStarted = new Date();
    workers.push(await startWorker(env), await startWorker(env));
    // The provider posts to one URL (behind a load balancer in production): the first worker's.
    if (workers[0]!.pushUrl) sandbox.control.registerPushUrl(workers[0]!.pushUrl);
    sandbox.control.resetStats();
    const started = Date.now();
    sampler = setInterval(() => {
      const stats = sandbox.control.stats();
      samples.push({ t: Date.now(), total: stats.total, limited: stats.rateLimited });
      void Promise.all(workers.map((w) => vmHwmMb(w.pid))).then((mb) => {
        peakRss = peakRss.map((p, i) => Math.max(p, mb[i] ?? 0));
      });
    }, 1000);

    const feedStart = new Date(Date.parse(sandbox.control.now()));
    feed.start(A);
    const eventsPerSecond = feed.eventsPerSecond(A);
    await sleep(runSeconds * 1000);
    feed.stop();
    const feedStopped = new Date(Date.parse(sandbox.control.now()));
    const feedSeconds = (Date.now() - started) / 1000;

    // The true share of complete recent cells at the feed's end, versions settled by then (the audit's
    // settle time) compared: what the audit's estimate, drawn during the run, is an estimate of.
    const atStop = await compareWithTruthInSql(
      db.url,
      sandbox,
      feedStart,
      new Date(feedStopped.getTime() - (10 * 60_000) / A),
      feed.pushed,
    );
    const cellsNow = sandbox.truth.users().length * 7;

    // Drain: the workers finish what is queued, the scheduled reconciliation passes run; until nothing
    // is missing or stale, or 3 minutes plus three pass intervals.
    const drainLimit = Date.now() + (180 + 3 * windowSeconds) * 1000;
    let final: TruthComparison = atStop;
    let gaps = await streamGaps(db.url, sandbox.orgId, runStarted);
    while (Date.now() < drainLimit) {
      await sleep(15_000);
      final = await compareWithTruthInSql(db.url, sandbox, feedStart, feedStopped, feed.pushed);
      gaps = await streamGaps(db.url, sandbox.orgId, runStarted);
      // Gaps of the run itself: the catch-up worker's stop leaves one no pass of the (then new)
      // reconciliation stream can cover, reported below.
      if (final.missing === 0 && final.stale === 0 && final.missingPushed === 0 && gaps.openSince === 0)
        break;
    }
    const drainSeconds = (Date.now() - started) / 1000 - feedSeconds;
    clearInterval(sampler);
    sampler = undefined;

    const status = await runCli(['status', '--json'], env);
    let org: any = {};
    try {
      org = JSON.parse(status.stdout).orgs?.[0] ?? {};
    } catch {
      org = { parseError: status.stderr.slice(0, 400) };
    }
    const jobs = await jobDurations(workers.map((w) => w.url));
    peakRss = (await Promise.all(workers.map((w) => vmHwmMb(w.pid)))).map((mb, i) =>
      Math.max(mb, peakRss[i]!),
    );
    const exitedEarly = await Promise.race([
      Promise.all(workers.map((w) => w.exited)).then(() => true),
      sleep(10).then(() => false),
    ]);

    // Requests: the most in any window of 3,600 ÷ A real seconds (1 s samples), ÷ 2,000 (the platform's hour).
    let mostInWindow = 0;
    for (let i = 0, j = 0; i < samples.length; i++) {
      while (samples[i]!.t - samples[j]!.t > windowSeconds * 1000) j++;
      mostInWindow = Math.max(mostInWindow, samples[i]!.total - samples[j]!.total);
    }
    const last = samples.at(-1) ?? { total: 0, limited: 0 };
    const limitedTotal = sandbox.control.stats().rateLimited;

    const fig = (suffix: string, figure: Omit<Parameters<typeof printFigure>[0], 'name'>) =>
      printFigure({ name: `${name}-${suffix}`, ...figure });
    fig('missing', {
      value: final.missing + final.stale,
      target: '0',
      ok: final.missing === 0 && final.stale === 0,
      raw: {
        users_at_start: users,
        users_added: feed.counts.newUsers,
        accelerate: A,
        simulated_hours: simulatedHours,
        real_feed_seconds: round(feedSeconds, 1),
        drain_seconds: round(drainSeconds, 1),
        feed_events_per_s: round(eventsPerSecond, 1),
        feed_counts: feed.counts,
        history_records: historyRecords,
        history_catch_up_seconds: round(catchUpSeconds, 1),
        sandbox_build_seconds: round(buildSeconds, 1),
        sandbox_heap_mb: Math.round(sandboxHeapMb),
        truth_records: final.truthRecords,
        stored_records: final.storedRecords,
        missing: final.missing,
        stale: final.stale,
        unexpected: final.unexpected,
        missing_users: final.missingUsers,
        missing_connection_events: final.missingConnectionEvents,
        pushed_legacy_records: feed.pushed.length,
        missing_pushed_legacy_records: final.missingPushed,
        missing_or_stale_sample: final.sample,
        at_feed_stop: {
          missing: atStop.missing,
          stale: atStop.stale,
          missing_pushed: atStop.missingPushed,
        },
        arrived_via: final.arrivedVia,
        load_at_start: loadAtStart,
        load_at_end: (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' '),
        workers_exited_early: exitedEarly,
        analyze_runs_standing_in_for_autovacuum: analyzer?.runs() ?? 0,
      },
    });
    fig('budget-use', {
      value: round(mostInWindow / PLATFORM_REQUESTS_PER_HOUR),
      target: '≤ 1',
      ok: mostInWindow <= PLATFORM_REQUESTS_PER_HOUR,
      raw: {
        most_requests_in_a_window: mostInWindow,
        window_real_seconds: round(windowSeconds, 2),
        platform_requests_per_hour: PLATFORM_REQUESTS_PER_HOUR,
        worker_requests_per_hour: PLATFORM_REQUESTS_PER_HOUR * A,
        requests_total: last.total,
        requests_per_simulated_hour_mean: round(last.total / ((samples.length / 3600) * A), 1),
        by_endpoint: sandbox.control.stats().byEndpoint,
      },
    });
    fig('429s', { value: limitedTotal, target: '0', ok: limitedTotal === 0 });
    const p50 = final.freshness.p50 * A;
    const p99 = final.freshness.p99 * A;
    fig('freshness-p50', {
      value: Math.round(p50),
      unit: 's simulated',
      target: 'information',
      ok: true,
      raw: { real_seconds: round(final.freshness.p50, 3), versions: final.freshness.count },
    });
    fig('freshness-p99', {
      value: Math.round(p99),
      unit: 's simulated',
      target: `≤ ${FRESHNESS_P99_TARGET_S}`,
      ok: p99 <= FRESHNESS_P99_TARGET_S,
      raw: {
        real_seconds: round(final.freshness.p99, 3),
        max_real_seconds: round(final.freshness.max, 3),
        versions: final.freshness.count,
      },
    });
    const meanOf = (job: string) => {
      const j = jobs[job];
      return j && j.count > 0 ? j.sum / j.count : 0;
    };
    // A tick's work (mostly database reads) does not shrink with A: compared with the production tick.
    const tickJobs = ['records.recent', 'push.drain'];
    const worstTick = Math.max(...tickJobs.map(meanOf));
    fig('tick-db-seconds', {
      value: round(worstTick, 3),
      unit: 's',
      target: `< ${PRODUCTION_TICK_SECONDS / 10} (a tenth of budget.tickSeconds ${PRODUCTION_TICK_SECONDS})`,
      // No run read (the workers gone before /metrics was read) is no figure, not a pass.
      ok: tickJobs.some((job) => (jobs[job]?.count ?? 0) > 0) && worstTick < PRODUCTION_TICK_SECONDS / 10,
      raw: {
        tick_real_seconds: round(Math.max(60 / A, TICK_FLOOR_SECONDS), 3),
        ...Object.fromEntries(
          Object.entries(jobs).map(([job, j]) => [
            job,
            { runs: j.count, mean_s: round(j.count ? j.sum / j.count : 0, 3), total_s: round(j.sum, 1) },
          ]),
        ),
      },
    });
    const peak = Math.max(...peakRss);
    fig('peak-rss', {
      value: Math.round(peak),
      unit: 'MB',
      target: `≤ ${PEAK_RSS_TARGET_MB} MB`,
      ok: peak <= PEAK_RSS_TARGET_MB,
      raw: { workers_mb: peakRss.map((p) => Math.round(p)), catch_up_worker_mb: Math.round(catchUpRssMb) },
    });
    const recent = org.audit?.completeness?.recent ?? null;
    const trueShare = 1 - atStop.incompleteCells / cellsNow;
    fig('audit-estimate', {
      value: recent ? round(recent.estimate, 4) : -1,
      target: `interval holds the true ${round(trueShare, 4)}`,
      ok: recent !== null && recent.lower <= trueShare && trueShare <= recent.upper,
      raw: {
        recent,
        history: org.audit?.completeness?.history ?? null,
        true_recent_share_at_feed_stop: round(trueShare, 5),
        incomplete_recent_cells_at_feed_stop: atStop.incompleteCells,
        recent_cells: cellsNow,
        audit_last7d: org.audit?.last7d ?? null,
        gaps_open_in_status: org.stream?.gaps?.open ?? null,
        gaps_by_reason: gaps.byReason,
        gaps_open_recorded_during_run: gaps.openSince,
        reconciliation_last7d: org.reconciliation?.last7d ?? null,
        budget_plan: org.budget ?? null,
      },
    });
  } finally {
    if (sampler) clearInterval(sampler);
    feed.stop();
    await analyzer?.stop();
    await Promise.all(workers.map((w) => w.stop().catch(() => {})));
    await sandbox.close();
    await redis.cleanup();
    await db.drop().catch(() => {});
    await rm(configDir, { recursive: true, force: true });
  }
}

if (usersOption === undefined) {
  // Both sizes, each in its own process: the 100,000-user sandbox alone is a few GB of heap.
  const sizes = quick ? [2_000] : [10_000, 100_000];
  for (const users of sizes) {
    const args = [
      fileURLToPath(import.meta.url),
      '--users',
      String(users),
      ...(accelerateOption === undefined ? [] : ['--accelerate', String(accelerateOption)]),
      ...(hours === undefined ? [] : ['--hours', String(hours)]),
      ...(quick ? ['--quick'] : []),
    ];
    const child = spawn(process.execPath, ['--max-old-space-size=12000', ...args], { stdio: 'inherit' });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) process.exitCode = 1;
  }
} else {
  // The sandbox builds a live record in ~1.5 ms here (series points formatted one by one), so its
  // feed tops out near 600 events/s on a core: 100,000 users at A = 144 would ask 1,400/s. Large
  // populations run slower, over a shorter span, to stay near 10 minutes of feed.
  const large = usersOption >= 100_000;
  await runSize(usersOption, accelerateOption ?? (large ? 24 : 144), hours ?? (large ? 4 : 24));
}
