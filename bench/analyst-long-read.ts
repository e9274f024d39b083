/**
 * An analyst's long read beside the loads. Run: `node bench/analyst-long-read.ts [--quick]`.
 *
 * Three rounds, each in a fresh database, each with the same load: a stream paced at 500 events/s into
 * months that exist (the current month, made ahead by `warehouse.maintain`: created before the round),
 * and a real backfill (inline runner, sandbox in its own thread, paced by its request budget so that it
 * outlasts the window) of five months that had no partition. The window is 5 minutes (`--quick`: 30 s).
 *
 * 1. `without`: nothing else.
 * 2. `with`: once the backfill's plan has created its months, an analyst login opens a transaction,
 *    reads all of `validic.records` (ACCESS SHARE on every partition, the default ones included) and
 *    keeps it open for the whole window.
 * 3. `read-first`: the same read, opened BEFORE the backfill is planned: its months cannot be created
 *    while the read holds the default partitions (PostgreSQL's ATTACH locks them), so the backfill's
 *    loads wait for the read to end; the stream must not.
 *
 * Per round: the stream's commit latency (frame read → commit, every data frame committed in the window;
 * p50/p95/p99) and the longest wait of any lock request in the database, sampled from `pg_locks` every
 * 100 ms (`waitstart`; the analyst never waits). Then the read ends, the backfill finishes and the
 * warehouse is counted: every record of the sandbox's truth and every frame the stream committed.
 *
 * Figures:
 * - `analyst-stream-p99`: p99 of round 2 ÷ p99 of round 1 (same run, same load). Target ≤ 1.25: the
 *   read must not change it (whole runs here move ratios by about ±0.1).
 * - `analyst-load-lock-wait`: the longest lock wait seen in rounds 2 and 3 ÷ the loads' lock timeout
 *   (LOAD_LOCK_TIMEOUT_MS). Target < 0.2: no load waits on the analyst (a wait of one load for another,
 *   tens of milliseconds, is what remains).
 * - `analyst-read-first-p99`: p99 of round 3 ÷ p99 of round 1, same target as the first; printed with how
 *   long the backfill's months waited for the read. Before migration 0032 this round stalled every load:
 *   the month's creation waited in the lock queue behind the read, and every load queued behind it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import pg from 'pg';
import { configSchema, organizationSchema } from '../src/config/schema.ts';
import { createHttpClient } from '../src/http/http-client.ts';
import { silentLogger } from '../src/log/logger.ts';
import { startSandbox } from '../src/sandbox/index.ts';
import { consumerOptionsFromConfig } from '../src/stream/consumer-options.ts';
import { startOrgStream } from '../src/stream/run-org-stream.ts';
import type { StreamsClient } from '../src/validic/streams-client.ts';
import { LOAD_LOCK_TIMEOUT_MS } from '../src/warehouse/loader/load-transaction.ts';
import { createMonthPartitions } from '../src/warehouse/loader/month-partitions.ts';
import { ADMIN_URL, asLogin, createTestDatabase, type TestDatabase, withClient } from '../test/helpers/pg.ts';
import { runInlineBackfill } from './helpers/inline-backfill.ts';
import { printFigure, quick, round } from './helpers/report.ts';
import { startSandboxThread } from './helpers/sandbox-thread.ts';

const WINDOW_SECONDS = quick ? 30 : 300;
const STREAM_RATE = 500;
const P99_TARGET = 1.25;
const WAIT_TARGET = 0.2;
const STREAM_ORG = 'bench-stream-org';
/** The backfill: five months that have no partition in a fresh database (its sandbox's clock). */
const BACKFILL = {
  users: quick ? 10 : 30,
  from: '2025-03-15',
  to: '2025-08-15',
  now: '2025-08-15T12:00:00Z',
};
/** Requests the backfill makes: users × 30-day windows (six with the edges) × seven resources, about. */
const BACKFILL_REQUESTS = BACKFILL.users * 6 * 7;

// ---------------------------------------------------------------- SSE server (worker thread)

async function serve(): Promise<void> {
  const sandbox = await startSandbox({ seed: 5, users: 20, days: 20, now: new Date('2026-03-15T12:00:00Z') });
  // Records only, so that every committed frame is one row of validic.records.
  const templates = sandbox.truth
    .events()
    .filter((e) => e.kind !== 'connection')
    .map((e) => e.payload as Record<string, unknown>);
  await sandbox.close();
  const months = new Set<string>();
  for (const t of templates) if (typeof t.start_time === 'string') months.add(t.start_time.slice(0, 7));
  let run = 0;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    run += 1;
    const id = `r${run}`;
    const started = Date.now();
    let sent = 0;
    let last = started;
    // STREAM_RATE events/s by elapsed time, every 10 ms; a poke every second.
    const timer = setInterval(() => {
      const now = Date.now();
      const due = Math.floor(((now - started) * STREAM_RATE) / 1000);
      let chunk = '';
      for (; sent < due; sent++) {
        const t = templates[sent % templates.length]!;
        chunk += `event: data\ndata: ${JSON.stringify({ ...t, id: `${id}-${sent}-${String(t.id)}` })}\n\n`;
      }
      if (now - last >= 1000) {
        chunk += `event: poke\ndata: {"ts":"${new Date(now).toISOString()}"}\n\n`;
        last = now;
      }
      if (chunk) res.write(chunk);
    }, 10);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  parentPort!.on('message', () => {
    server.closeAllConnections();
    server.close();
    parentPort!.close();
  });
  parentPort!.postMessage({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    months: [...months].sort(),
  });
}

// ---------------------------------------------------------------- rounds (main thread)

type RoundKind = 'without' | 'with' | 'read-first';

interface RoundResult {
  kind: RoundKind;
  latencies: number[];
  maxLockWaitMs: number;
  maxLockWaitOf: string;
  backfillSeconds: number;
  /** Seconds from the round's start until the backfill's first month existed. */
  monthsAfterSeconds: number;
  backfillRecords: number;
  truthRecords: number;
  streamCommitted: number;
  streamStored: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function monthExists(db: TestDatabase, month: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_class where relnamespace = 'validic_partitions'::regnamespace
      and relname = ${`records_${month.replace('-', '_')}`}`.execute(db.warehouse.db);
  return rows[0]!.n > 0;
}

/** Samples the longest wait of any lock request in the database every 100 ms, until stopped. */
function sampleLockWaits(url: string) {
  const client = new pg.Client({ connectionString: url });
  let max = 0;
  let of = 'none';
  let running = true;
  const done = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ ms: number; what: string }>(
        `select extract(epoch from now() - waitstart) * 1000 as ms,
                locktype || ' ' || mode || coalesce(' on ' || relation::regclass::text, '') as what
           from pg_locks where not granted and waitstart is not null
            and database = (select oid from pg_database where datname = current_database())
          order by waitstart limit 1`,
      );
      const row = rows[0];
      if (row && Number(row.ms) > max) {
        max = Number(row.ms);
        of = row.what;
      }
      await sleep(100);
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { maxMs: max, of };
    },
  };
}

async function runRound(
  kind: RoundKind,
  server: { url: string; months: string[] },
  analystLogin: string,
): Promise<RoundResult> {
  const backfillSandbox = await startSandboxThread({
    seed: 11,
    users: BACKFILL.users,
    days: 150,
    now: new Date(BACKFILL.now),
  });
  const db = await createTestDatabase();
  const http = createHttpClient({ logger: silentLogger });
  try {
    for (const month of server.months) await createMonthPartitions(db.warehouse, month, month);
    await sql`checkpoint`.execute(db.warehouse.db);
    const firstMonth = BACKFILL.from.slice(0, 7);
    if (await monthExists(db, firstMonth)) throw new Error(`${firstMonth} exists before the backfill`);

    const analyst = new pg.Client({ connectionString: asLogin(db.url, analystLogin) });
    await analyst.connect();
    const openRead = async () => {
      await analyst.query('begin');
      await analyst.query('select count(*) from validic.records');
    };
    const started = performance.now();
    if (kind === 'read-first') await openRead();

    // The stream: the real consumer and loader, from the paced server.
    const config = configSchema.parse({});
    const name = `bench-${kind}`;
    // Frames read within the window, whenever they commit (a stalled frame counts when it lands).
    let windowFrom = Number.POSITIVE_INFINITY;
    let windowTo = Number.POSITIVE_INFINITY;
    let committed = 0;
    const latencies: number[] = [];
    /** When the latest committed frame was read: commits go in order, so all before it are in. */
    let committedUpTo = 0;
    const stopStream = new AbortController();
    const stream = await startOrgStream({
      warehouse: db.warehouse,
      org: {
        config: organizationSchema.parse({ orgId: STREAM_ORG, token: 'bench-token', stream: { name } }),
        http,
        streams: {
          findOrCreateStream: async () => ({ id: name, name }),
          connectUrl: () => new URL(`${server.url}/stream`),
          replayUrl: () => new URL(`${server.url}/stream`),
        } as unknown as StreamsClient,
      },
      signal: stopStream.signal,
      consumerOptions: consumerOptionsFromConfig(config.stream),
      hooks: {
        onCommit: (e) => {
          for (const f of e.frames) committedUpTo = Math.max(committedUpTo, f.receivedAt);
          for (const f of e.frames) {
            if (f.kind !== 'data') continue;
            committed += 1;
            if (f.receivedAt >= windowFrom && f.receivedAt < windowTo)
              latencies.push(e.committedAt - f.receivedAt);
          }
        },
      },
    });

    // The backfill, paced by its budget so that it still loads when the window ends.
    const requestsPerHour = Math.ceil((BACKFILL_REQUESTS / (WINDOW_SECONDS * 1.5)) * 3600);
    const backfill = runInlineBackfill(
      { databaseUrl: db.url, sandbox: backfillSandbox.info, requestsPerHour },
      { from: BACKFILL.from, to: BACKFILL.to },
    );
    let monthsAfterSeconds = Number.NaN;
    const monthsWatch = (async () => {
      while (!(await monthExists(db, firstMonth))) await sleep(50);
      monthsAfterSeconds = (performance.now() - started) / 1000;
    })();
    // The read opens once the plan has made the months (rounds 1 and 2 start the window there too).
    if (kind !== 'read-first') await monthsWatch;
    if (kind === 'with') await openRead();

    const sampler = sampleLockWaits(db.url);
    windowFrom = Date.now();
    await sleep(WINDOW_SECONDS * 1000);
    windowTo = Date.now();
    if (kind !== 'without') await analyst.query('commit');
    await analyst.end();

    const outcome = await backfill;
    await monthsWatch;
    if (outcome.failures > 0) throw new Error(`backfill had ${outcome.failures} failed jobs`);
    // Every frame read in the window has committed (the stream lags by a micro-batch or two).
    while (committedUpTo < windowTo) await sleep(50);
    const waits = await sampler.stop();
    stopStream.abort();
    await stream.done;
    const stored = async (orgId: string) =>
      (
        await sql<{
          n: number;
        }>`select count(*)::int as n from validic.records where org_id = ${orgId}`.execute(db.warehouse.db)
      ).rows[0]!.n;
    return {
      kind,
      latencies: latencies.sort((a, b) => a - b),
      maxLockWaitMs: waits.maxMs,
      maxLockWaitOf: waits.of,
      backfillSeconds: outcome.seconds,
      monthsAfterSeconds,
      backfillRecords: await stored(backfillSandbox.info.orgId),
      truthRecords: backfillSandbox.info.records,
      streamCommitted: committed,
      streamStored: await stored(STREAM_ORG),
    };
  } finally {
    await http.close();
    await db.drop();
    await backfillSandbox.close();
  }
}

async function measure(): Promise<void> {
  const worker = new Worker(new URL(import.meta.url), { argv: process.argv.slice(2) });
  const server = await new Promise<{ url: string; months: string[] }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const analystLogin = `bench_analyst_${process.pid}`;
  await withClient(ADMIN_URL, (admin) =>
    admin.query(`create role ${analystLogin} login in role validic_analyst`),
  );
  try {
    const rounds: RoundResult[] = [];
    for (const kind of ['without', 'with', 'read-first'] as const)
      rounds.push(await runRound(kind, server, analystLogin));
    const [without, withRead, readFirst] = rounds as [RoundResult, RoundResult, RoundResult];
    const p99 = (r: RoundResult) => percentile(r.latencies, 99);
    const summary = (r: RoundResult) => ({
      frames: r.latencies.length,
      p50_ms: Math.round(percentile(r.latencies, 50)),
      p95_ms: Math.round(percentile(r.latencies, 95)),
      p99_ms: Math.round(p99(r)),
      max_ms: Math.round(r.latencies.at(-1) ?? Number.NaN),
      max_lock_wait_ms: Math.round(r.maxLockWaitMs),
      max_lock_wait_of: r.maxLockWaitOf,
      backfill_months_after_s: round(r.monthsAfterSeconds, 1),
      backfill_seconds: round(r.backfillSeconds, 1),
      backfill_records: `${r.backfillRecords} of ${r.truthRecords}`,
      stream_records: `${r.streamStored} of ${r.streamCommitted} committed`,
    });
    const complete = rounds.every(
      (r) => r.backfillRecords === r.truthRecords && r.streamStored === r.streamCommitted,
    );
    const ratio = p99(withRead) / p99(without);
    printFigure({
      name: 'analyst-stream-p99',
      value: round(ratio),
      target: `≤ ${P99_TARGET}`,
      ok: ratio <= P99_TARGET && complete,
      raw: {
        window_seconds: WINDOW_SECONDS,
        stream_events_per_s: STREAM_RATE,
        without: summary(without),
        with_read: summary(withRead),
        nothing_lost: complete ? 'yes' : 'no',
      },
    });
    const longest = Math.max(withRead.maxLockWaitMs, readFirst.maxLockWaitMs);
    printFigure({
      name: 'analyst-load-lock-wait',
      value: round(longest / LOAD_LOCK_TIMEOUT_MS, 3),
      target: `< ${WAIT_TARGET}`,
      ok: longest / LOAD_LOCK_TIMEOUT_MS < WAIT_TARGET,
      raw: {
        lock_timeout_ms: LOAD_LOCK_TIMEOUT_MS,
        with_read_ms: Math.round(withRead.maxLockWaitMs),
        read_first_ms: Math.round(readFirst.maxLockWaitMs),
        without_ms: Math.round(without.maxLockWaitMs),
      },
    });
    const firstRatio = p99(readFirst) / p99(without);
    printFigure({
      name: 'analyst-read-first-p99',
      value: round(firstRatio),
      target: `≤ ${P99_TARGET}`,
      ok: firstRatio <= P99_TARGET && complete,
      raw: {
        read_first: summary(readFirst),
        note: "the backfill's months wait for the read (backfill_months_after_s): PostgreSQL cannot attach a partition while a transaction reads the default partition",
      },
    });
  } finally {
    worker.postMessage('close');
    await withClient(ADMIN_URL, (admin) => admin.query(`drop role if exists ${analystLogin}`));
  }
}

if (isMainThread) await measure();
else await serve();
