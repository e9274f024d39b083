/**
 * `npm run bench`: runs every bench in this folder (each `bench/*.ts` but this file) as a child process, in
 * sequence, so no two measurements share the machine; echoes their output; collects the figure lines
 * (`bench <name>: <value> (target …) ok|short`) and the indented raw lines under them; and writes
 * bench/RESULTS.md with the figures, the date, the machine and the conditions.
 *
 * Flags: `--quick` (passed on: smaller sizes, a fast check; results are printed, RESULTS.md is left
 * alone unless `--out` is given), `--out FILE` (write the results there instead), `--only a,b` (bench
 * file names without .ts).
 * Exit code: 0 when every bench ran (a `short` figure is a result, not a failure), 1 when one crashed.
 */
import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ADMIN_URL } from '../test/helpers/pg.ts';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Preferred order: cheap and independent first, the long scale runs last. Unknown benches follow, by name. */
const ORDER = [
  'sandbox-throughput',
  'loader',
  'redelivery',
  'backfill',
  'stream-throughput',
  'queue-overhead',
  'budget',
  // Three rounds of a 5-minute window (about 17 minutes).
  'analyst-long-read',
  'scale-and-memory',
  'query-scaling',
  // The whole worker over a simulated day at 10,000 and 100,000 users: the longest (about 50 minutes).
  'population',
];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const outIndex = args.indexOf('--out');
const out = outIndex >= 0 ? args[outIndex + 1] : quick ? undefined : `${BENCH_DIR}RESULTS.md`;
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? new Set((args[onlyIndex + 1] ?? '').split(',').filter(Boolean)) : undefined;

interface BenchRun {
  name: string;
  code: number | null;
  seconds: number;
  /** Figure lines with their indented raw lines. */
  figures: string[][];
}

async function listBenches(): Promise<string[]> {
  const names = (await readdir(BENCH_DIR))
    .filter((f) => f.endsWith('.ts') && f !== 'run-all.ts')
    .map((f) => f.slice(0, -3))
    .filter((n) => !only || only.has(n));
  const rank = (n: string) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function runBench(name: string): Promise<BenchRun> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [`${BENCH_DIR}${name}.ts`, ...(quick ? ['--quick'] : [])], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const figures: string[][] = [];
  let buffered = '';
  const take = (line: string) => {
    if (line.startsWith('bench ')) figures.push([line]);
    else if (/^\s+\S/.test(line) && figures.length > 0) figures.at(-1)!.push(line);
  };
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) take(line);
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (buffered) take(buffered);
      resolve({ name, code, seconds: Number(process.hrtime.bigint() - started) / 1e9, figures });
    });
  });
}

/** Runs `fn` on a fresh connection to the admin database, closed afterwards. */
async function withAdminClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

async function postgresVersion(): Promise<string> {
  try {
    const { rows } = await withAdminClient((c) => c.query<{ server_version: string }>('show server_version'));
    return rows[0]?.server_version ?? 'unknown';
  } catch (error) {
    return `unreachable (${(error as Error).message})`;
  }
}

/**
 * A CHECKPOINT before each bench, so that none starts while PostgreSQL is still writing out the dirty
 * pages of the one before (a timed or WAL-size checkpoint would then land inside its measurement).
 * Needs superuser or pg_checkpoint; without them the bench runs anyway.
 */
async function checkpointServer(): Promise<void> {
  try {
    await withAdminClient((c) => c.query('checkpoint'));
  } catch (error) {
    console.log(`(no checkpoint before the bench: ${(error as Error).message})`);
  }
}

function machine(pgVersion: string) {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  return {
    cpus: `${os.availableParallelism()} × ${cpu}`,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    postgresql: pgVersion,
  };
}

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');

function render(
  runs: BenchRun[],
  info: ReturnType<typeof machine>,
  startedAt: Date,
  loadBefore: string,
): string {
  const figureLines = runs.flatMap((r) =>
    r.figures.length > 0 ? r.figures.map((f) => f[0]!) : [`bench ${r.name}: no figure (exit ${r.code})`],
  );
  const failed = runs.filter((r) => r.code !== 0);
  return `# Benchmark results

Latest run of \`npm run bench\`${quick ? ' (--quick: smaller sizes)' : ''}, written by \`bench/run-all.ts\`. Every figure is a
ratio to a limit measured in the same run on the same machine (absolute times on a shared 2-core machine
are noise); the raw numbers each figure came from are listed under it.

- Date: ${startedAt.toISOString()} (suite took ${Math.round(runs.reduce((s, r) => s + r.seconds, 0))} s)
- Machine: ${info.cpus}; ${info.memory} RAM; ${info.os}
- Node ${info.node}; PostgreSQL ${info.postgresql} (defaults, 127.0.0.1, trust auth)
- Load average (1 / 5 / 15 min) before: ${loadBefore}; after: ${loadavg()} — the machine is shared, other
  work may have been running
- Conditions: the sandbox in a worker thread (or the bench's own process) at zero latency, no faults
  except the budget bench's request budget; each bench creates and drops its own databases; benches run
  one after another, each in its own process, each after a server CHECKPOINT.

## Figures

\`\`\`
${figureLines.join('\n')}
\`\`\`
${failed.length > 0 ? `\nFailed benches: ${failed.map((r) => `${r.name} (exit ${r.code})`).join(', ')}\n` : ''}
## Raw numbers

${runs
  .map(
    (r) =>
      `### ${r.name} (${r.seconds.toFixed(0)} s${r.code === 0 ? '' : `, exit ${r.code}`})\n\n\`\`\`\n${
        r.figures.length > 0 ? r.figures.map((f) => f.join('\n')).join('\n') : '(no output)'
      }\n\`\`\`\n`,
  )
  .join('\n')}`;
}

const startedAt = new Date();
const loadBefore = loadavg();
const runs: BenchRun[] = [];
for (const name of await listBenches()) {
  console.log(`\n# ${name}`);
  await checkpointServer();
  const run = await runBench(name);
  if (run.code !== 0) console.log(`bench ${name}: failed (exit ${run.code})`);
  runs.push(run);
}

console.log('\n# summary');
for (const r of runs) {
  for (const f of r.figures) console.log(f[0]);
  if (r.code !== 0) console.log(`bench ${r.name}: failed (exit ${r.code})`);
}
if (out) {
  await writeFile(out, render(runs, machine(await postgresVersion()), startedAt, loadBefore));
  console.log(`\nwrote ${out}`);
}
process.exitCode = runs.some((r) => r.code !== 0) ? 1 : 0;
