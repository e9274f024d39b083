/**
 * The demo: the whole product against the built-in sandbox, in one process, with nothing but Node.
 * Users and a v2 backfill, the live stream with a disconnect whose gap the replay fills, connection
 * reconciliation, and the legacy v1 API; then a summary of what landed and two analyst queries.
 *
 * Without DATABASE_URL it uses an embedded warehouse in `.data/demo` (fresh each run); without
 * REDIS_URL jobs run inline. With them set, it uses them (and leaves the data there).
 */
import { rm } from 'node:fs/promises';
import { type Config, configSchema } from '../config/schema.ts';
import { EXAMPLE_QUERIES } from '../docs/example-queries.ts';
import type { Logger } from '../log/logger.ts';
import type { InlineRunner } from '../queue/inline-runner.ts';
import { registerSecret } from '../redact/redact-secrets.ts';
import { formatTable } from '../report/format-table.ts';
import { type Sandbox, startSandbox } from '../sandbox/index.ts';
import { consumerOptionsFromConfig } from '../stream/consumer-options.ts';
import { startOrgStream } from '../stream/run-org-stream.ts';
import { readDemoTables, runExampleQuery } from '../warehouse/summaries.ts';
import { createInlineRunner } from '../worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../worker/runtime.ts';

export interface DemoOptions {
  log: Logger;
  /**
   * The stream step's logger (default `log`). The step disconnects on purpose while data flows, so the
   * stream reports a gap, which the step's own line tells (and the replay fills): the command quiets it.
   */
  streamLog?: Logger;
  print: (line: string) => void;
  signal: AbortSignal;
  databaseUrl?: string | undefined;
  redisUrl?: string | undefined;
  /** Embedded warehouse folder (wiped first). */
  dataDir?: string;
  /** Days of generated history (default 14). */
  days?: number;
  users?: number;
}

const DEMO_DATA_DIR = '.data/demo';
const LEGACY_OBJECT_COUNT = 7;

export async function runDemo(options: DemoOptions): Promise<void> {
  const { print, log, signal } = options;
  const started = Date.now();
  const days = options.days ?? 14;
  print('validic-sync demo: the sandbox platform, a warehouse, and a full sync\n');
  const sandbox = await startSandbox({ seed: 42, users: options.users ?? 8, days, pokeIntervalMs: 500 });
  registerSecret(sandbox.token);
  const dataDir = options.dataDir ?? DEMO_DATA_DIR;
  if (!options.databaseUrl) await rm(dataDir, { recursive: true, force: true });
  const config = demoConfig(sandbox, options, dataDir);
  print(
    `  platform   sandbox at ${new URL(sandbox.apiUrl).origin} (seeded: ${sandbox.truth.users().length} users, ${days} days)`,
  );
  print(
    `  warehouse  ${options.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite in ${dataDir}`}`,
  );
  print(
    `  jobs       ${options.redisUrl ? 'request budget shared through Redis (REDIS_URL)' : 'inline, in this process'}\n`,
  );
  const runtime = await openRuntime(config, log);
  try {
    const orgId = sandbox.orgId;
    const to = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - (days + 20) * 86_400_000).toISOString().slice(0, 10);

    await step(print, `1. Backfill users, v2 records and connection events, ${from}..${to}`, async () => {
      const { results } = await runJobs(runtime, signal, 'records.backfill', { orgId, from, to });
      // The plan's result: ledger windows (user × resource × ≤ 30 days), not the jobs that fetched them.
      const plan = results.find(
        (r): r is { windows: number; users: number } =>
          typeof r === 'object' && r !== null && 'alreadyDone' in r,
      );
      return `${plan?.windows ?? 0} windows (${plan?.users ?? 0} users × resources × 30-day windows, and connection events) fetched`;
    });

    await step(print, '2. Stream: live events, a disconnect, and the replay that fills the gap', async () =>
      streamWithGap(runtime, sandbox, config, signal, options.streamLog ?? log),
    );

    await step(print, '3. Reconcile connection events (adds what the stream missed)', async () => {
      // While the stream was down in step 2, users connected a source: only reconciliation sees it.
      for (const user of sandbox.truth.users().slice(0, 2)) sandbox.control.connectSource(user.uid, 'dexcom');
      const reconcileFrom = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
      const { results } = await runJobs(runtime, signal, 'connections.reconcile', {
        orgId,
        startDate: reconcileFrom,
        endDate: to,
      });
      const result = results[0] as { events: number; inserted: number };
      return `${result.events} events seen, ${result.inserted} added that the warehouse did not have`;
    });

    await step(print, '4. Legacy v1: latest windows of every object', async () => {
      const result = await runJobs(runtime, signal, 'legacy.sync', {
        orgId,
        from: new Date(Date.now() - (days + 1) * 86_400_000).toISOString(),
      });
      return `${result.count} windows of ${LEGACY_OBJECT_COUNT} objects fetched`;
    });

    await printSummary(runtime, print, Date.now() - started);
  } finally {
    await runtime.close();
    await sandbox.close();
  }
}

function demoConfig(sandbox: Sandbox, options: DemoOptions, dataDir: string): Config {
  return configSchema.parse({
    databaseUrl: options.databaseUrl,
    redisUrl: options.redisUrl,
    dataDir,
    allowInsecureLoopback: true,
    // Short thresholds so a one-minute demo shows a gap being replayed.
    stream: { staleAfterMs: 5000, gapAfterMs: 1000, batchMaxWaitMs: 100 },
    organizations: [
      {
        orgId: sandbox.orgId,
        token: sandbox.token,
        apiUrl: sandbox.apiUrl,
        streamsUrl: sandbox.streamsUrl,
        legacyUrl: sandbox.legacyUrl,
        legacyOrgId: sandbox.legacyOrgId,
        legacyToken: sandbox.legacyToken,
        requestsPerHour: 1_000_000,
        stream: { name: 'validic-sync-demo' },
        legacy: { enabled: true },
      },
    ],
  });
}

async function step(
  print: (line: string) => void,
  title: string,
  body: () => Promise<string>,
): Promise<void> {
  const t0 = Date.now();
  print(title);
  const outcome = await body();
  print(`   ${outcome} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

/** Runs a job and everything it fans out; `count` is the fanned-out jobs, `results` every job's result. */
async function runJobs(
  runtime: Runtime,
  signal: AbortSignal,
  name: string,
  payload: unknown,
): Promise<{ count: number; results: unknown[] }> {
  // Any job by name: the runner checks the name and the payload when they arrive.
  const runner: InlineRunner = createInlineRunner(runtime, signal, runtime.config.sync.concurrency);
  const results: unknown[] = [];
  runner.on('completed', (_job, result) => results.push(result));
  runner.enqueue(name, payload);
  const failures = await runner.drain();
  if (failures.length > 0) throw failures[0]!.error;
  return { count: results.length - 1, results };
}

/** Streams live data, disconnects while the platform keeps producing, reconnects: replay fills the gap. */
async function streamWithGap(
  runtime: Runtime,
  sandbox: Sandbox,
  config: Config,
  signal: AbortSignal,
  log: Logger,
): Promise<string> {
  const org = runtime.org(sandbox.orgId);
  const run = async (until: (handle: Awaited<ReturnType<typeof startOrgStream>>) => boolean) => {
    const stop = new AbortController();
    const handle = await startOrgStream({
      warehouse: runtime.warehouse,
      org,
      signal: AbortSignal.any([signal, stop.signal]),
      consumerOptions: consumerOptionsFromConfig(config.stream),
      log,
    });
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (until(handle) || signal.aborted) {
          clearInterval(timer);
          resolve();
        }
      }, 100);
    });
    stop.abort();
    return handle.done;
  };

  sandbox.control.startLiveFeed({ ratePerSecond: 25 });
  const live = await run((h) => h.summary().counters.frames.data >= 40);
  // Disconnected: the platform goes on producing (and updates a few records) while nobody listens.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  for (const record of sandbox.truth.records({ type: 'measurement' }).slice(0, 3))
    sandbox.control.updateRecord(record.id);
  sandbox.control.stopLiveFeed();
  const resumed = await run(
    (h) => Date.now() - h.lastDataAt() > 2000 && h.summary().counters.frames.data > 0,
  );
  const c = resumed.counters;
  return `live: ${live.counters.frames.data} events, then a disconnect (${live.counters.gaps === 1 ? 'a gap' : `${live.counters.gaps} gaps`} recorded: events in it may be missed); after the gap: ${c.frames.data} events, ${c.replays} replay(s), ${resumed.records.inserted + live.records.inserted} new and ${resumed.records.updated} updated records, duplicates skipped ${resumed.records.unchanged}`;
}

async function printSummary(
  runtime: Runtime,
  print: (line: string) => void,
  durationMs: number,
): Promise<void> {
  const db = runtime.warehouse.db;
  print('\nWhat landed in the warehouse');
  const { byType, bySource, totals } = await readDemoTables(db);
  print(formatTable(byType));
  print('');
  print(formatTable(bySource));
  print('');
  print(formatTable(totals));
  for (const title of ['Daily steps per user (local date)', 'Latest blood pressure of every user']) {
    const query = EXAMPLE_QUERIES.find((q) => q.title === title)!;
    const rows = await runExampleQuery(db, query.sql);
    print(`\nAnalyst query: ${query.title}\n`);
    print(
      query.sql
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n'),
    );
    print('');
    print(formatTable(rows.slice(0, 8)));
    if (rows.length > 8) print(`(${rows.length - 8} more rows)`);
  }
  // A command to copy as it is: without its VALIDIC_DATA_DIR it would read another (or no) warehouse.
  print(
    `\nDone in ${(durationMs / 1000).toFixed(1)} s. Query the warehouse yourself: ${runtime.config.databaseUrl ? 'psql "$DATABASE_URL"' : `VALIDIC_DATA_DIR=${runtime.config.dataDir} npm run cli -- sql "select * from validic.data_freshness"`}`,
  );
}
