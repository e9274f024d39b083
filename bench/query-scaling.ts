/**
 * Query scaling: do the analysts' queries stay fast as the warehouse grows over time? Every example
 * query of src/docs/example-queries.ts (the ones docs/warehouse.md shows) is timed on a small and a
 * large warehouse built in the same run; the figure of each is its time at large ÷ at small.
 *
 * - The shape of the issue "The warehouse at a year of a large population": the population stays, the
 *   months pile up. The small warehouse holds one month (2026-03) of a population, the large one ten
 *   months (2025-06 to 2026-03) of the SAME population: the same users, 10× the months, ≈ 10× the
 *   records. A user's records of a day are seeded by (user, day) (the sandbox's own user and record
 *   factories), so the small warehouse's month is, record for record, the large one's last month
 *   (up to the few records whose UTC start falls across the month's edge from a neighbouring day).
 * - The population: ≈ 19 records a user a day (measurements, meals, a daily summary, a workout, a
 *   night's sleep; one user in five with a daily intraday series at 15-minute points, one in ten a CGM
 *   series if they have a CGM source), as many users as make the small warehouse's size.
 * - Loaded through the real loader only (`applyBatch`, batches of 4,000 items, two in flight): the
 *   users and their connection events, then day by day, every user's records of the day (as a worker
 *   polling a population lays them out), with an ANALYZE of records and record_versions every 10 days
 *   of records (autovacuum's part on a live server; the test server runs without autovacuum, and without
 *   statistics the loader's probe of stored versions reads every stored record of the organization
 *   for each batch), then VACUUM ANALYZE; read only through the public relations
 *   (records, the views), so the bench measures whatever the schema of the day is.
 * - Each query is run once on each warehouse (discarded), then timed alternately: the median of 9 runs
 *   (3 for a query that reads the whole warehouse; the best of each is printed too). Bounded examples
 *   (`bound`: one user and/or one month) run for a user who has steps, blood pressure and meals in the
 *   month, and the month 2026-03.
 * - `query-scaling-<name>` of a query bounded to the month (`month`, `user and month`): target ≤ 1.5
 *   (it reads the month's partition, the same in both). A query bounded to a user without a time bound
 *   (`user`) reads every month of the user, 10× the rows at large: information (the reason is printed),
 *   unless listed in `USER_ALL_TIME_TARGETED`. A query over the whole warehouse is information (it reads
 *   10× the rows by nature). The scan and join nodes of both plans, and the partitions the large plan
 *   reads, are printed for the bounded ones.
 *
 * Sizes (records of the small warehouse; the large one has ≈ 10×): 1M, so 1M and 10M; `--quick`: 100k
 * and 1M. `--records 20000` overrides. `--keep` leaves both databases (their names are printed) for a
 * look at the plans; drop them after. Progress goes to stderr. The full run (2026-11-25, shared 2-core
 * machine) loaded 1.0M + 9.8M records in 2 + 24 minutes (8,000 and 6,900 records/s), 1.9 + 18.5 GB
 * of schemas `validic` and `validic_partitions` (≈ 1.9 KB a record; keep ≈ 30 GB free with the WAL);
 * timing the whole-warehouse examples on 10M records takes about as long again.
 * Run: `node bench/query-scaling.ts [--quick]`.
 */
import pg from 'pg';
import { bindExample, EXAMPLE_QUERIES } from '../src/docs/example-queries.ts';
import type { RawItem } from '../src/pipeline/batch.ts';
import { buildUser, connectionEvent, sourceFor, sourceInfo } from '../src/sandbox/generate-data.ts';
import { createPrng, type Prng } from '../src/sandbox/prng.ts';
import { buildRecord, computeChecksum } from '../src/sandbox/record-factory.ts';
import { DAY_MS, isoMillis, isoSeconds, startOfUtcDay } from '../src/sandbox/time.ts';
import type { ResourceType, User, V2Record } from '../src/sandbox/types.ts';
import { applyBatch } from '../src/warehouse/loader/apply-batch.ts';
import { createTestDatabase, type TestDatabase, withClient } from '../test/helpers/pg.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const TARGET = 1.5;
const recordsArg = process.argv.indexOf('--records');
/** Records of the small warehouse (one month); the large one holds ten months of the same users. */
const SMALL_RECORDS = recordsArg >= 0 ? Number(process.argv[recordsArg + 1]) : quick ? 100_000 : 1_000_000;
const KEEP = process.argv.includes('--keep');
const ORG_ID = 'bench-query-scaling';
/** The month the small warehouse holds and the bounded examples run for (its first day, UTC). */
const MONTH = '2026-03-01';
const MONTH_MS = Date.parse(`${MONTH}T00:00:00Z`);
const NEXT_MONTH_MS = Date.UTC(2026, 3, 1);
/** The large warehouse: ten months, ending with the small one's. */
const LARGE_MONTHS = 10;
const LARGE_FIRST_MS = Date.UTC(2026, 3 - LARGE_MONTHS, 1);
/** Sources renamed on this day (the sandbox's renamed sources): before the small warehouse's month. */
const RENAME_MS = Date.UTC(2025, 9, 15);
/** Today (UTC): recent connection events are dated from it. */
const RECENT_DAY = startOfUtcDay(Date.now());
const BATCH_ITEMS = 4_000;
const IN_FLIGHT = 2;
/** Bounded queries take milliseconds, where one burst of other work on the shared machine moves a median of 5. */
const BOUNDED_RUNS = 9;
const UNBOUNDED_RUNS = 3;
/** Bounds a query that goes wrong on the large warehouse (the full run must end). */
const STATEMENT_TIMEOUT = '10min';
/** Days of records between two ANALYZEs while loading (see the header). */
const ANALYZE_EVERY_DAYS = 10;
const HOUR = 3_600_000;
const MINUTE = 60_000;
/**
 * Examples bounded to a user without a time bound that keep the ≤ 1.5 target (they read every month
 * of the user, but little of each); the others are information.
 */
const USER_ALL_TIME_TARGETED = new Set<string>([]);

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

const hex8 = (value: number) => (value >>> 0).toString(16).padStart(8, '0');

interface Person {
  n: number;
  user: User;
  utcOffset: number;
  /** The user and their connection events. */
  items: RawItem[];
}

/** User `n`: profile and connection events, the same in both warehouses. */
function person(n: number): Person {
  const prng = createPrng((Math.imul(n + 1, 0x9e3779b1) ^ 0x5bd1e995) >>> 0);
  const uid = `uid-${String(n).padStart(12, '0')}`;
  const createdMs = LARGE_FIRST_MS - prng.int(1, 20) * DAY_MS;
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
  return { n, user: built.user, utcOffset: built.utcOffset, items };
}

/** User `n`'s records of the day starting at `day` (UTC midnight): seeded by (n, day), the same in both warehouses. */
function dayRecords(p: Person, day: number): V2Record[] {
  const dayIndex = Math.round(day / DAY_MS);
  const prng = createPrng(
    (Math.imul(p.n + 1, 0x9e3779b1) ^ Math.imul(dayIndex, 0x85ebca6b) ^ 0xc2b2ae35) >>> 0,
  );
  const records: V2Record[] = [];
  for (const [type, mean] of Object.entries(mixOf(p.n)) as [ResourceType, number][]) {
    for (let k = countOf(prng, mean); k > 0; k--) {
      const source = sourceFor(prng, p.user, type, day, RENAME_MS);
      if (!source) continue;
      const record = buildRecord({
        prng,
        orgId: ORG_ID,
        user: p.user,
        utcOffset: p.utcOffset,
        type,
        dayMs: day,
        sourceType: source.type,
        device: source.device,
        createdAtMs: 0,
        intradayIntervalMinutes: 15,
      });
      // Unique by construction (user, day, position), whatever the seeds.
      record.id = hex8(Math.imul(p.n + 1, 0x9e3779b1)) + hex8(dayIndex) + hex8(records.length);
      let createdAt = Date.parse(record.end_time) + prng.int(5, 180) * MINUTE;
      if (prng.chance(0.01)) {
        createdAt += HOUR;
        record.deleted_at = isoSeconds(createdAt);
      }
      record.created_at = isoMillis(createdAt);
      record.checksum = computeChecksum(record);
      records.push(record);
    }
  }
  return records;
}

/** Has what every bounded example asks for in the month: intraday steps, blood pressure and meals. */
function fitsExamples(records: V2Record[]): boolean {
  const seen = { steps: false, bp: false, meals: false };
  for (const record of records) {
    if (record.type === 'nutrition' && !record.deleted_at) seen.meals = true;
    for (const m of record.metrics) {
      if (m.type === 'steps' && 'data_points' in m) seen.steps = true;
      if (m.type === 'systolic') seen.bp = true;
    }
  }
  return seen.steps && seen.bp && seen.meals;
}

/** The population: as many users as make `target` records in the month, and the example user. */
function population(target: number): { people: Person[]; exampleUid: string } {
  const people: Person[] = [];
  let records = 0;
  let exampleUid: string | undefined;
  while (records < target) {
    const p = person(people.length);
    people.push(p);
    const month: V2Record[] = [];
    for (let day = MONTH_MS; day < NEXT_MONTH_MS; day += DAY_MS) month.push(...dayRecords(p, day));
    records += month.length;
    if (!exampleUid && fitsExamples(month)) exampleUid = p.user.uid;
  }
  if (!exampleUid) throw new Error('no user has steps, blood pressure and meals in the month');
  return { people, exampleUid };
}

interface Built {
  db: TestDatabase;
  users: number;
  records: number;
  days: number;
  loadSeconds: number;
  schemaBytes: number;
  partitions: number;
}

/** Fills `db` with the population's users, then their records day by day from `firstMs`, through applyBatch only. */
async function fill(
  db: TestDatabase,
  label: string,
  people: Person[],
  firstMs: number,
): Promise<Omit<Built, 'schemaBytes' | 'partitions'>> {
  const started = process.hrtime.bigint();
  const inFlight = new Set<Promise<void>>();
  let pending: RawItem[] = [];
  let records = 0;
  let inserted = 0;
  let quarantined = 0;
  /** Loads PostgreSQL rolled back for a deadlock or serialization failure (0: no load met another). */
  let transactionRetries = 0;
  let lastProgress = started;
  let current = firstMs;
  const days = Math.round((NEXT_MONTH_MS - firstMs) / DAY_MS);
  const submit = async (items: RawItem[]) => {
    const write = applyBatch(
      db.warehouse,
      { orgId: ORG_ID, arrivedVia: 'poll', items },
      { cursors: [] },
    ).then((r) => {
      inserted += r.inserted;
      quarantined += r.quarantined;
      transactionRetries += r.transactionRetries;
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
        `query-scaling: ${label} ${records.toLocaleString('en')} records generated (day ${isoSeconds(current).slice(0, 10)} of ${days}), ${Math.round(records / s)}/s, ${Math.round(s)} s\n`,
      );
    }
  };
  const add = async (items: RawItem[]) => {
    pending.push(...items);
    if (pending.length >= BATCH_ITEMS) {
      const batch = pending;
      pending = [];
      await submit(batch);
    }
  };
  for (const p of people) await add(p.items);
  let items = 0;
  for (let day = firstMs; day < NEXT_MONTH_MS; day += DAY_MS) {
    current = day;
    if (day !== firstMs && Math.round((day - firstMs) / DAY_MS) % ANALYZE_EVERY_DAYS === 0) {
      // What autovacuum does on a live server (the test server runs without it): the loader's probe
      // of stored versions is planned from the partitions' statistics, and with none it reads every
      // stored record of the organization for each batch.
      await Promise.all(inFlight);
      await withClient(db.url, (client) => client.query('analyze validic.records, validic.record_versions'));
    }
    for (const p of people) {
      const dayItems = dayRecords(p, day).map((raw): RawItem => ({ kind: 'record', raw }));
      records += dayItems.length;
      items += dayItems.length;
      await add(dayItems);
    }
  }
  if (pending.length > 0) await submit(pending);
  await Promise.all(inFlight);
  const loadSeconds = secondsSince(started);
  // Users, connection events and records: every item new, none quarantined.
  if (quarantined > 0 || inserted < items) {
    throw new Error(`${label}: ${inserted} inserted, ${quarantined} quarantined of ${items} records`);
  }
  process.stderr.write(
    `query-scaling: ${label} loaded ${records.toLocaleString('en')} records of ${people.length} users over ${days} days in ${Math.round(loadSeconds)} s (${transactionRetries} transaction retries)\n`,
  );
  return { db, users: people.length, records, days, loadSeconds };
}

async function schemaBytes(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::text as bytes
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname in ('validic', 'validic_partitions') and c.relkind in ('r', 'm')`,
  );
  return Number(rows[0]!.bytes);
}

async function partitionsWithRows(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `select count(*)::int as n from pg_class c join pg_namespace s on s.oid = c.relnamespace
     where s.nspname = 'validic_partitions' and c.relkind = 'r' and c.relname like 'records\\_%' and c.reltuples > 0`,
  );
  return rows[0]!.n;
}

async function build(label: string, people: Person[], firstMs: number): Promise<Built> {
  const db = await createTestDatabase();
  try {
    const filled = await fill(db, label, people, firstMs);
    await withClient(db.url, async (client) => {
      const started = process.hrtime.bigint();
      await client.query('vacuum analyze');
      await client.query('checkpoint');
      process.stderr.write(`query-scaling: ${label} vacuum analyze ${Math.round(secondsSince(started))} s\n`);
    });
    return {
      ...filled,
      schemaBytes: await withClient(db.url, schemaBytes),
      partitions: await withClient(db.url, partitionsWithRows),
    };
  } catch (error) {
    await db.drop();
    throw error;
  }
}

/** One timed example. */
interface Case {
  name: string;
  title: string;
  text: string;
  target: string;
  ok: (ratio: number) => boolean;
  bound: string;
}

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
    .filter((line) => /Scan|Join|Nested Loop|Append|Subplans Removed/.test(line))
    .map((line) => line.replace(/\s+\(cost=.*$/, ''));
}

/** The month partitions a plan reads (after the pruning EXPLAIN can see). */
const partitionsOf = (nodes: string[]) => [
  ...new Set(
    nodes.flatMap((line) =>
      [...line.matchAll(/\bon (records_\d{4}_\d{2}|records_undated)\b/g)].map((m) => m[1]!),
    ),
  ),
];

const warehouses: Built[] = [];
const clients: pg.Client[] = [];
try {
  const overall = process.hrtime.bigint();
  const { people, exampleUid } = population(SMALL_RECORDS);
  process.stderr.write(
    `query-scaling: ${people.length} users make ${SMALL_RECORDS.toLocaleString('en')} records in ${MONTH.slice(0, 7)}\n`,
  );
  warehouses.push(await build('small', people, MONTH_MS));
  warehouses.push(await build('large', people, LARGE_FIRST_MS));
  const [small, large] = warehouses as [Built, Built];
  for (const w of warehouses) {
    const client = new pg.Client({ connectionString: w.db.url });
    await client.connect();
    await client.query(`set statement_timeout = '${STATEMENT_TIMEOUT}'`);
    clients.push(client);
  }
  const values = { orgId: ORG_ID, uid: exampleUid, month: MONTH };

  printFigure({
    name: 'query-scaling-warehouses',
    value: round(large.records / small.records),
    target: 'information: records at large ÷ at small',
    ok: true,
    raw: {
      records: [small.records, large.records],
      users: [small.users, large.users],
      days: [small.days, large.days],
      month_partitions_with_rows: [small.partitions, large.partitions],
      records_per_user_day: [small, large].map((w) => round(w.records / w.users / w.days, 1)),
      span: [`${MONTH.slice(0, 7)}`, `${isoSeconds(LARGE_FIRST_MS).slice(0, 7)} to ${MONTH.slice(0, 7)}`],
      schema_validic_mb: [small.schemaBytes, large.schemaBytes].map((b) => Math.round(b / 2 ** 20)),
      load_seconds: [round(small.loadSeconds, 1), round(large.loadSeconds, 1)],
      load_records_per_s: [small, large].map((w) => Math.round(w.records / w.loadSeconds)),
      bounded_to: values,
    },
  });

  const cases: Case[] = EXAMPLE_QUERIES.map((query) => {
    const text = bindExample(query, values).replace(/;\s*$/, '');
    const targeted =
      query.bound === 'month' ||
      query.bound === 'user and month' ||
      (query.bound === 'user' && USER_ALL_TIME_TARGETED.has(query.name));
    return {
      name: query.name,
      title: query.title,
      text,
      target: targeted
        ? `≤ ${TARGET}`
        : query.bound === 'user'
          ? "information: reads every month of the user's data"
          : 'information: reads the whole warehouse',
      ok: targeted ? (ratio: number) => ratio <= TARGET : () => true,
      bound: query.bound ?? 'none',
    };
  });
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
    const plans = bounded ? await Promise.all(clients.map((client) => planNodes(client, c.text))) : [];
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
              partitions_large: partitionsOf(plans[1]!).join(', '),
              plan_small: plans[0]!.join(' | '),
              plan_large: plans[1]!.join(' | '),
            }
          : {}),
      },
    });
  }
  process.stderr.write(`query-scaling: done in ${Math.round(secondsSince(overall))} s\n`);
} finally {
  for (const client of clients) await client.end().catch(() => {});
  for (const w of warehouses) {
    if (KEEP) {
      await w.db.warehouse.close();
      process.stderr.write(`query-scaling: kept database ${w.db.name}\n`);
    } else {
      await w.db.drop();
    }
  }
}
