/**
 * Scale curve and memory, from the same runs: the real `validic-sync backfill` CLI as a child process
 * (sandbox at zero latency in a worker thread of this process, PostgreSQL warehouse) over 10k, 100k and
 * 1M records of the same per-user shape (more users, same mix; intraday kept light: hourly points).
 *
 * - `scale-slope`: per-record time at the largest size ÷ at the smallest (target ≤ 1.5: cost stays flat).
 *   Time is the CLI's own "done in X s" (from the first job to the last commit: no process start-up,
 *   no migrations).
 * The child gets the heap flags every launcher of the product passes (src/runtime/heap-flags.ts).
 * - `memory-peak-rss`: the child's peak RSS (VmHWM from /proc, sampled every 100 ms) at the largest
 *   size (target ≤ 300 MB).
 * - `memory-growth`: peak RSS at the largest size ÷ at the middle one, 10× fewer records (target ≤ 1.2:
 *   memory does not grow with the record count).
 * Run: `node bench/scale-and-memory.ts [--quick]` (quick: 2k, 20k, 60k records).
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { NODE_HEAP_FLAGS } from '../src/runtime/heap-flags.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { printFigure, quick, round } from './helpers/report.ts';
import { type SandboxInfo, startSandboxThread } from './helpers/sandbox-thread.ts';

const CLI_MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SIZES = quick ? [2_000, 20_000, 60_000] : [10_000, 100_000, 1_000_000];
/** Records per user per day by type: ≈ 30 a day, ≈ 900 per user over the 30 days. */
const MIX = { measurement: 12, nutrition: 5, summary: 5, workout: 4, sleep: 4, intraday: 2, cgm: 0.33 };
const RECORDS_PER_USER = 900;
const SLOPE_TARGET = 1.5;
const RSS_TARGET_MB = 300;
const GROWTH_TARGET = 1.2;

interface Run {
  target: number;
  users: number;
  records: number;
  seconds: number;
  wallSeconds: number;
  peakRssMb: number;
  /** Largest heap left after a full (mark-compact) GC: what is really live. */
  liveHeapMb: number;
}

async function peakRssKb(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const hwm = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return hwm ? Number(hwm[1]) : null;
  } catch {
    return null; // the process has exited
  }
}

async function backfillChild(
  sandbox: SandboxInfo,
  databaseUrl: string,
): Promise<Omit<Run, 'target' | 'users'>> {
  const started = process.hrtime.bigint();
  // --trace-gc only logs: it tells the live heap after each full GC apart from the RSS V8 keeps around.
  const child = spawn(
    process.execPath,
    [...NODE_HEAP_FLAGS, '--trace-gc', CLI_MAIN, 'backfill', '--from', '2026-02-14', '--to', '2026-03-15'],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: databaseUrl,
        VALIDIC_ORG_ID: sandbox.orgId,
        VALIDIC_TOKEN: sandbox.token,
        VALIDIC_API_URL: sandbox.apiUrl,
        VALIDIC_STREAMS_URL: sandbox.streamsUrl,
        VALIDIC_LEGACY_URL: sandbox.legacyUrl,
        VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true',
        VALIDIC_REQUESTS_PER_HOUR: '100000000',
        LOG_LEVEL: 'warn',
      },
    },
  );
  let stdout = '';
  let stderr = '';
  let partial = '';
  let liveHeapMb = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const gc = /Mark-Compact [\d.]+ \([\d.]+\) -> ([\d.]+) \(/.exec(line);
      if (gc) liveHeapMb = Math.max(liveHeapMb, Number(gc[1]));
      else if (!line.includes('Scavenge')) stdout += `${line}\n`;
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  let peakKb = 0;
  const sampler = setInterval(async () => {
    const kb = await peakRssKb(child.pid!);
    if (kb !== null && kb > peakKb) peakKb = kb;
  }, 100);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  clearInterval(sampler);
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const done = /: done in ([\d.]+) s/.exec(stdout);
  const inserted = /records: inserted (\d+), updated (\d+), unchanged (\d+)/.exec(stdout);
  if (code !== 0 || !done || !inserted) {
    throw new Error(`backfill exited ${code}\nstdout:\n${stdout}\nstderr:\n${stderr.slice(-4000)}`);
  }
  return {
    records: Number(inserted[1]) + Number(inserted[2]) + Number(inserted[3]),
    seconds: Number(done[1]),
    wallSeconds,
    peakRssMb: peakKb / 1024,
    liveHeapMb,
  };
}

const runs: Run[] = [];
for (const target of SIZES) {
  const users = Math.max(1, Math.round(target / RECORDS_PER_USER));
  // 1M records take several GB in the sandbox's truth and page cache; its thread gets room for them.
  const sandbox = await startSandboxThread(
    {
      seed: 5,
      users,
      days: 30,
      now: new Date('2026-03-15T12:00:00Z'),
      intradayIntervalMinutes: 60,
      mix: MIX,
    },
    { maxOldGenerationSizeMb: 16_384 },
  );
  const db = await createTestDatabase();
  try {
    await db.warehouse.close();
    const run = await backfillChild(sandbox.info, db.url);
    runs.push({ target, users, ...run });
    console.error(
      `  ${target} target: ${run.records} records in ${run.seconds} s, peak RSS ${Math.round(run.peakRssMb)} MB`,
    );
  } finally {
    await db.drop().catch(() => {});
    await sandbox.close();
  }
}

const perRecordUs = (r: Run) => (r.seconds / r.records) * 1e6;
const smallest = runs[0]!;
const middle = runs[runs.length - 2]!;
const largest = runs[runs.length - 1]!;
const slope = perRecordUs(largest) / perRecordUs(smallest);
const growth = largest.peakRssMb / middle.peakRssMb;
const table = Object.fromEntries(
  runs.map((r) => [
    r.target,
    {
      users: r.users,
      records: r.records,
      seconds: r.seconds,
      wall_seconds: round(r.wallSeconds, 1),
      us_per_record: round(perRecordUs(r), 1),
      records_per_s: Math.round(r.records / r.seconds),
      peak_rss_mb: Math.round(r.peakRssMb),
      max_live_heap_after_full_gc_mb: Math.round(r.liveHeapMb),
    },
  ]),
);
printFigure({
  name: 'scale-slope',
  value: round(slope),
  target: `≤ ${SLOPE_TARGET}`,
  ok: slope <= SLOPE_TARGET,
  raw: { definition: `per-record time at ${largest.records} ÷ at ${smallest.records} records`, runs: table },
});
printFigure({
  name: 'memory-peak-rss',
  value: Math.round(largest.peakRssMb),
  unit: 'MB',
  target: `≤ ${RSS_TARGET_MB} MB`,
  ok: largest.peakRssMb <= RSS_TARGET_MB,
  raw: {
    records: largest.records,
    peak_rss_by_size_mb: Object.fromEntries(runs.map((r) => [r.records, Math.round(r.peakRssMb)])),
  },
});
printFigure({
  name: 'memory-growth',
  value: round(growth),
  target: `≤ ${GROWTH_TARGET}`,
  ok: growth <= GROWTH_TARGET,
  raw: { definition: `peak RSS at ${largest.records} ÷ at ${middle.records} records` },
});
