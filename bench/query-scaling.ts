/**
 * Query scaling: do the analysts' queries stay fast as the warehouse grows? Every example query of
 * src/docs/example-queries.ts (the ones docs/warehouse.md shows) is timed on a small and a large
 * warehouse, 10× the records, built in the same run; the figure of each is its time at large ÷ at small.
 *
 * - Both warehouses cover the same three months (2026-01-01 to 2026-03-31) at the same density per user
 *   (≈ 19 records a user a day: measurements, meals, a daily summary, a workout, a night's sleep; one
 *   user in five with an intraday series a day, one in ten a CGM series if they have a CGM): the large
 *   one has 10× the users, as a real population grows. User `n` gets the same records in both (seeded
 *   by `n`; the sandbox's own user and record factories), so a query bounded to one user reads the same
 *   rows in both.
 * - Loaded through the real loader only (`applyBatch`, batches of 4,000 items, two in flight), then
 *   VACUUM ANALYZE; read only through the public relations (records, record_metrics, the views), so the
 *   bench measures whatever the schema of the day is.
 * - Each query is run once on each warehouse (discarded), then timed alternately: the median of 9 runs
 *   (3 for a query that reads the whole warehouse; the best of each is printed too). Bounded examples (`bound`: one user and/or one
 *   month) run for a user who has steps, blood pressure and meals, and the month 2026-02.
 * - `query-scaling-<name>` of a bounded query: target ≤ 1.5 (issue "The warehouse at a year of a large
 *   population"). The same figure of a query over the whole warehouse is information (it reads 10× the
 *   rows by nature). The scan and join nodes of both plans are printed for the bounded ones.
 *
 * - Printed for information too: each user-bounded example filtered on `uid` alone (`…-uid-only`: the
 *   index of a user's records starts with `org_id`), and the warehouses themselves.
 *
 * Sizes: 1M and 10M records; `--quick`: 100k and 1M. `--sizes 20000,200000` overrides both. Progress
 * goes to stderr. The full run loads 11M records (about an hour on the shared 2-core machine, at
 * 4–5k records/s) and needs about 35 GB of free disk (≈ 3 KB of schema `validic` per record today).
 * Run: `node bench/query-scaling.ts [--quick]`.
 */
import pg from 'pg';
import { bindExample, EXAMPLE_QUERIES } from '../src/docs/example-queries.ts';
import { connectionEvent, sourceFor } from '../src/sandbox/generate-data.ts';
import { buildUser } from '../src/sandbox/generate-users.ts';
import { createPrng, type Prng } from '../src/sandbox/prng.ts';
import { buildRecord, computeChecksum } from '../src/sandbox/record-factory.ts';
import { sourceInfo } from '../src/sandbox/sources.ts';
import { DAY_MS, isoMillis, isoSeconds, startOfUtcDay } from '../src/sandbox/time.ts';
import type { ResourceType } from '../src/sandbox/types.ts';
import { applyBatch } from '../src/warehouse/apply-batch.ts';
import type { RawItem } from '../src/warehouse/batch.ts';
import { createTestDatabase, type TestDatabase } from '../test/helpers/pg.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const TARGET = 1.5;
const sizesArg = process.argv.indexOf('--sizes');
const SIZES: [number, number] =
  sizesArg >= 0
    ? ((process.argv[sizesArg + 1] ?? '').split(',').map(Number) as [number, number])
    : quick
      ? [100_000, 1_000_000]
      : [1_000_000, 10_000_000];
const ORG_ID = 'bench-query-scaling';
const FIRST_DAY = Date.UTC(2026, 0, 1);
const DAYS = 90;
/** Today (UTC): recent connection events are dated from it. */
const RECENT_DAY = startOfUtcDay(Date.now());
/** The month the bounded examples run for (its first day). */
const MONTH = '2026-02-01';
const BATCH_ITEMS = 4_000;
const IN_FLIGHT = 2;
/** Bounded queries take milliseconds, where one burst of other work on the shared machine moves a median of 5. */
const BOUNDED_RUNS = 9;
const UNBOUNDED_RUNS = 3;
/** Bounds a query that goes wrong on the large warehouse (the full run must end). */
const STATEMENT_TIMEOUT = '10min';
const HOUR = 3_600_000;
const MINUTE = 60_000;

/** Records per user and day of each type (when the user has a source for it). */
function mixOf(n: number): Record<ResourceType, number> {
  return {
    measurement: 9,
    nutrition: 10,
    summary: 1,
    workout: 1,
    sleep: 1,
    intraday: n % 5 === 0 ? 1 : 0,
    cgm: n % 10 === 0 ? 1 : 0,
  };
}

/** How many records of a mean `mean` a day: spread around it, the same on average. */
function countOf(prng: Prng, mean: number): number {
  if (mean < 1) return prng.chance(mean) ? 1 : 0;
  return prng.int(Math.ceil(mean / 2), Math.floor((mean * 3) / 2));
}

interface UserData {
  uid: string;
  items: RawItem[];
  records: number;
  /** Has what every bounded example asks for: intraday steps, blood pressure and meals. */
  fitsExamples: boolean;
}

/** User `n`'s profile, connection events and records over the span: the same for a given n. */
function userData(n: number): UserData {
  const prng = createPrng((Math.imul(n + 1, 0x9e3779b1) ^ 0x5bd1e995) >>> 0);
  const uid = `uid-${String(n).padStart(12, '0')}`;
  const createdMs = FIRST_DAY - prng.int(1, 20) * DAY_MS;
  const built = buildUser(prng, uid, createdMs, 'https://bench.invalid');
  const items: RawItem[] = [{ kind: 'user', raw: built.user }];
  for (const s of built.user.sources) {
    if (!sourceInfo(s.type)?.reportsConnections) continue;
    const event = connectionEvent(prng, ORG_ID, built.user, s.type, 'create', createdMs + HOUR);
    items.push({ kind: 'connection_event', raw: event });
    // Some disconnect lately (the guide's connection example looks at the last 90 days).
    if (prng.chance(0.2)) {
      const at = RECENT_DAY - prng.int(1, 60) * DAY_MS;
      items.push({
        kind: 'connection_event',
        raw: connectionEvent(prng, ORG_ID, built.user, s.type, 'delete', at),
      });
    }
  }
  const mix = mixOf(n);
  const renameDay = FIRST_DAY + (DAYS / 2) * DAY_MS;
  const seen = { steps: false, bp: false, meals: false };
  let records = 0;
  for (let d = 0; d < DAYS; d++) {
    const day = FIRST_DAY + d * DAY_MS;
    for (const [type, mean] of Object.entries(mix) as [ResourceType, number][]) {
      for (let k = countOf(prng, mean); k > 0; k--) {
        const source = sourceFor(prng, built.user, type, day, renameDay);
        if (!source) continue;
        const record = buildRecord({
          prng,
          orgId: ORG_ID,
          user: built.user,
          utcOffset: built.utcOffset,
          type,
          dayMs: day,
          sourceType: source.type,
          device: source.device,
          createdAtMs: 0,
          intradayIntervalMinutes: 15,
        });
        let createdAt = Date.parse(record.end_time) + prng.int(5, 180) * MINUTE;
        if (prng.chance(0.01)) {
          createdAt += HOUR;
          record.deleted_at = isoSeconds(createdAt);
        }
        record.created_at = isoMillis(createdAt);
        record.checksum = computeChecksum(record);
        items.push({ kind: 'record', raw: record });
        records++;
        if (type === 'nutrition') seen.meals = true;
        for (const m of record.metrics) {
          if (m.type === 'steps' && 'data_points' in m) seen.steps = true;
          if (m.type === 'systolic') seen.bp = true;
        }
      }
    }
  }
  return { uid, items, records, fitsExamples: seen.steps && seen.bp && seen.meals };
}

interface Built {
  db: TestDatabase;
  users: number;
  records: number;
  loadSeconds: number;
  /** The first user with what every bounded example asks for. */
  exampleUid: string;
  schemaBytes: number;
}

/** Fills `db` with users 0, 1, … until `target` records, through applyBatch only. */
async function fill(db: TestDatabase, label: string, target: number): Promise<Omit<Built, 'schemaBytes'>> {
  const started = process.hrtime.bigint();
  const inFlight = new Set<Promise<void>>();
  let pending: RawItem[] = [];
  let records = 0;
  let inserted = 0;
  let quarantined = 0;
  let users = 0;
  let exampleUid: string | undefined;
  let lastProgress = started;
  const submit = async (items: RawItem[]) => {
    const write = applyBatch(
      db.warehouse,
      { orgId: ORG_ID, arrivedVia: 'poll', items },
      { cursors: [] },
    ).then((r) => {
      inserted += r.inserted;
      quarantined += r.quarantined;
    });
    inFlight.add(write);
    write.then(
      () => inFlight.delete(write),
      () => inFlight.delete(write),
    );
    if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
    if (process.hrtime.bigint() - lastProgress > 10_000_000_000n) {
      lastProgress = process.hrtime.bigint();
      const s = secondsSince(started);
      process.stderr.write(
        `query-scaling: ${label} ${records.toLocaleString('en')}/${target.toLocaleString('en')} records generated, ${Math.round(records / s)}/s, ${Math.round(s)} s\n`,
      );
    }
  };
  while (records < target) {
    const user = userData(users++);
    records += user.records;
    if (!exampleUid && user.fitsExamples) exampleUid = user.uid;
    pending.push(...user.items);
    if (pending.length >= BATCH_ITEMS) {
      await submit(pending);
      pending = [];
    }
  }
  if (pending.length > 0) await submit(pending);
  await Promise.all(inFlight);
  const loadSeconds = secondsSince(started);
  // Users, connection events and records: every item new, none quarantined.
  if (quarantined > 0 || inserted < records) {
    throw new Error(`${label}: ${inserted} inserted, ${quarantined} quarantined of ${records} records`);
  }
  if (!exampleUid) throw new Error(`${label}: no user has steps, blood pressure and meals`);
  process.stderr.write(
    `query-scaling: ${label} loaded ${records.toLocaleString('en')} records of ${users} users in ${Math.round(loadSeconds)} s\n`,
  );
  return { db, users, records, loadSeconds, exampleUid };
}

async function schemaBytes(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::text as bytes
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'validic' and c.relkind in ('r', 'p', 'm')`,
  );
  return Number(rows[0]!.bytes);
}

async function build(label: string, target: number): Promise<Built> {
  const db = await createTestDatabase();
  try {
    const filled = await fill(db, label, target);
    await withClient(db.url, async (client) => {
      const started = process.hrtime.bigint();
      await client.query('vacuum analyze');
      await client.query('checkpoint');
      process.stderr.write(`query-scaling: ${label} vacuum analyze ${Math.round(secondsSince(started))} s\n`);
    });
    return { ...filled, schemaBytes: await withClient(db.url, schemaBytes) };
  } catch (error) {
    await db.drop();
    throw error;
  }
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** One timed query: an example, or a variant of one printed for information. */
interface Case {
  name: string;
  title: string;
  text: string;
  target: string;
  ok: (ratio: number) => boolean;
  bound: string;
}

/** The organization part of a bounded example's user filter (`org_id = '…' and uid = '…'`). */
const ORG_FILTER = new RegExp(`\\b(r\\.)?org_id = '${ORG_ID}' and (?=(r\\.)?uid = )`, 'g');

interface Timing {
  ms: number[];
  rows: number;
}

async function timeOnce(client: pg.Client, text: string): Promise<{ ms: number; rows: number }> {
  const started = process.hrtime.bigint();
  const result = await client.query(text);
  return { ms: secondsSince(started) * 1000, rows: result.rowCount ?? result.rows.length };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** The plan's scan and join nodes, one short line each (what decides how a query grows). */
async function planNodes(client: pg.Client, text: string): Promise<string[]> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain ${text}`);
  return rows
    .map((r) => r['QUERY PLAN'].trim().replace(/^->\s*/, ''))
    .filter((line) => /Scan|Join|Nested Loop|Append/.test(line))
    .map((line) => line.replace(/\s+\(cost=.*$/, ''));
}

const warehouses: Built[] = [];
const clients: pg.Client[] = [];
try {
  const overall = process.hrtime.bigint();
  warehouses.push(await build('small', SIZES[0]));
  warehouses.push(await build('large', SIZES[1]));
  const [small, large] = warehouses as [Built, Built];
  for (const w of warehouses) {
    const client = new pg.Client({ connectionString: w.db.url });
    await client.connect();
    await client.query(`set statement_timeout = '${STATEMENT_TIMEOUT}'`);
    clients.push(client);
  }
  const values = { orgId: ORG_ID, uid: small.exampleUid, month: MONTH };
  if (large.exampleUid !== small.exampleUid)
    throw new Error('the example user differs between the warehouses');

  printFigure({
    name: 'query-scaling-warehouses',
    value: round(large.records / small.records),
    target: 'information: records at large ÷ at small',
    ok: true,
    raw: {
      records: [small.records, large.records],
      users: [small.users, large.users],
      records_per_user_day: round(small.records / small.users / DAYS, 1),
      span: `${isoSeconds(FIRST_DAY).slice(0, 10)} + ${DAYS} days`,
      schema_validic_mb: [small.schemaBytes, large.schemaBytes].map((b) => Math.round(b / 2 ** 20)),
      load_seconds: [round(small.loadSeconds, 1), round(large.loadSeconds, 1)],
      load_records_per_s: [small, large].map((w) => Math.round(w.records / w.loadSeconds)),
      bounded_to: values,
    },
  });

  const cases: Case[] = [];
  for (const query of EXAMPLE_QUERIES) {
    const text = bindExample(query, values).replace(/;\s*$/, '');
    cases.push({
      name: query.name,
      title: query.title,
      text,
      target: query.bound ? `≤ ${TARGET}` : 'information: reads the whole warehouse',
      ok: query.bound ? (ratio) => ratio <= TARGET : () => true,
      bound: query.bound ?? 'none',
    });
    // What an analyst who leaves out org_id (one organization in the warehouse) gets.
    const uidOnly = text.replace(ORG_FILTER, '');
    if (query.bound?.startsWith('user') && uidOnly !== text) {
      cases.push({
        name: `${query.name}-uid-only`,
        title: `${query.title}, filtered on uid without org_id`,
        text: uidOnly,
        target: 'information: the same without org_id',
        ok: () => true,
        bound: query.bound,
      });
    }
  }
  for (const c of cases) {
    process.stderr.write(`query-scaling: timing ${c.name}\n`);
    const bounded = c.bound !== 'none';
    const runs = bounded ? BOUNDED_RUNS : UNBOUNDED_RUNS;
    const timings: Timing[] = [];
    try {
      // Warm-up: one discarded run on each, which also gives the row counts.
      for (const client of clients) timings.push({ ms: [], rows: (await timeOnce(client, c.text)).rows });
      for (let run = 0; run < runs; run++) {
        for (const [i, client] of clients.entries()) timings[i]!.ms.push((await timeOnce(client, c.text)).ms);
      }
    } catch (error) {
      printFigure({
        name: `query-scaling-${c.name}`,
        value: Number.NaN,
        target: c.target,
        ok: false,
        raw: { title: c.title, error: String(error) },
      });
      continue;
    }
    const [ms0, ms1] = timings.map((t) => median(t.ms)) as [number, number];
    const ratio = ms1 / ms0;
    printFigure({
      name: `query-scaling-${c.name}`,
      value: round(ratio),
      target: c.target,
      ok: c.ok(ratio),
      raw: {
        title: c.title,
        bound: c.bound,
        median_ms: [round(ms0, 2), round(ms1, 2)],
        best_ms: timings.map((t) => round(Math.min(...t.ms), 2)),
        runs_ms: timings.map((t) => t.ms.map((ms) => round(ms, 1))),
        rows: timings.map((t) => t.rows),
        ...(bounded
          ? {
              plan_small: (await planNodes(clients[0]!, c.text)).join(' | '),
              plan_large: (await planNodes(clients[1]!, c.text)).join(' | '),
            }
          : {}),
      },
    });
  }
  process.stderr.write(`query-scaling: done in ${Math.round(secondsSince(overall))} s\n`);
} finally {
  for (const client of clients) await client.end().catch(() => {});
  for (const w of warehouses) await w.db.drop();
}
