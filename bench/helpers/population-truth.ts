/**
 * The warehouse against the sandbox's truth for a whole population, in SQL: the truth's keys are
 * loaded into temporary tables (in chunks, as arrays) and compared there, so 100,000 users and their
 * records are never held twice in this process (test/helpers/compare-with-truth.ts does the same
 * comparison in memory, for tests).
 */
import pg from 'pg';
import type { Sandbox } from '../../src/sandbox/index.ts';

export interface TruthComparison {
  truthRecords: number;
  storedRecords: number;
  /** In the truth, not in the warehouse. */
  missing: number;
  /** Stored with another checksum or another deleted state than the truth's current version. */
  stale: number;
  /** Stored, not in the truth. */
  unexpected: number;
  missingUsers: number;
  /** Connection events the platform serves (created from 2025-07-01) the warehouse lacks. */
  missingConnectionEvents: number;
  /** Legacy records written during the run (each announced by a push) the warehouse lacks. */
  missingPushed: number;
  /** created_at → commit (updated_at of the stored current version), seconds, for versions created from `since`. */
  freshness: { count: number; p50: number; p99: number; max: number };
  /** Distinct (user, record type) with a version created before `settledBefore` missing or stale. */
  incompleteCells: number;
  /** The oldest few missing or stale versions: where to start looking. */
  sample: { id: string; uid: string; type: string; created_at: string; stored: boolean }[];
  /** By how each stored current version arrived (stream, reconcile, audit, poll…). */
  arrivedVia: Record<string, number>;
}

const CHUNK = 20_000;

async function loadChunks<T>(
  client: pg.Client,
  rows: T[],
  insert: string,
  columns: ((row: T) => unknown)[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const slice = rows.slice(i, i + CHUNK);
    await client.query(
      insert,
      columns.map((column) => slice.map(column)),
    );
  }
}

export async function compareWithTruthInSql(
  databaseUrl: string,
  sandbox: Sandbox,
  since: Date,
  settledBefore: Date,
  pushed: { object: string; id: string }[],
): Promise<TruthComparison> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const org = sandbox.orgId;
    await client.query(
      'create temp table truth_records (id text primary key, checksum text, deleted bool, created_at timestamptz, uid text, type text)',
    );
    const records = sandbox.truth.records();
    await loadChunks(
      client,
      records,
      'insert into truth_records select * from unnest($1::text[], $2::text[], $3::bool[], $4::timestamptz[], $5::text[], $6::text[])',
      [
        (r) => r.id,
        (r) => r.checksum,
        (r) => r.deleted_at != null,
        (r) => r.created_at,
        (r) => r.user.uid,
        (r) => r.type,
      ],
    );
    const truthRecords = records.length;
    records.length = 0;
    await client.query('analyze truth_records');
    const counts = await client.query<{
      stored: number;
      missing: number;
      stale: number;
      unexpected: number;
    }>(
      `select
         (select count(*)::int from validic.records where org_id = $1) as stored,
         (select count(*)::int from truth_records t
            where not exists (select 1 from validic.records r where r.org_id = $1 and r.id = t.id)) as missing,
         (select count(*)::int from truth_records t join validic.records r on r.org_id = $1 and r.id = t.id
            where r.checksum <> t.checksum or (r.deleted_at is not null) <> t.deleted) as stale,
         (select count(*)::int from validic.records r
            where r.org_id = $1 and not exists (select 1 from truth_records t where t.id = r.id)) as unexpected`,
      [org],
    );
    const fresh = await client.query<{
      n: number;
      p50: number | null;
      p99: number | null;
      max: number | null;
    }>(
      `select count(*)::int as n,
         percentile_cont(0.5) within group (order by lag) as p50,
         percentile_cont(0.99) within group (order by lag) as p99,
         max(lag) as max
       from (select extract(epoch from r.updated_at - t.created_at)::float8 as lag
             from truth_records t join validic.records r on r.org_id = $1 and r.id = t.id and r.checksum = t.checksum
             where t.created_at >= $2) l`,
      [org, since],
    );
    // The audit's recent cells (user × resource × the last 30 days) that differ from the truth in a
    // version settled before `settledBefore` (the audit leaves younger versions out of a cell).
    const cells = await client.query<{ n: number }>(
      `select count(*)::int as n from (
         select distinct t.uid, t.type from truth_records t
         left join validic.records r on r.org_id = $1 and r.id = t.id
         where t.created_at < $2
           and (r.id is null or r.checksum <> t.checksum or (r.deleted_at is not null) <> t.deleted)) c`,
      [org, settledBefore],
    );
    const sample = await client.query<{
      id: string;
      uid: string;
      type: string;
      created_at: Date;
      stored: boolean;
    }>(
      `select t.id, t.uid, t.type, t.created_at, r.id is not null as stored from truth_records t
       left join validic.records r on r.org_id = $1 and r.id = t.id
       where r.id is null or r.checksum <> t.checksum or (r.deleted_at is not null) <> t.deleted
       order by t.created_at limit 5`,
      [org],
    );
    const via = await client.query<{ arrived_via: string; n: number }>(
      'select arrived_via, count(*)::int as n from validic.records where org_id = $1 group by 1 order by 1',
      [org],
    );

    await client.query('create temp table truth_users (uid text primary key)');
    await loadChunks(
      client,
      sandbox.truth.users(),
      'insert into truth_users select * from unnest($1::text[])',
      [(u) => u.uid],
    );
    const users = await client.query<{ n: number }>(
      `select count(*)::int as n from truth_users t
       where not exists (select 1 from validic.users u where u.org_id = $1 and u.uid = t.uid)`,
      [org],
    );

    await client.query('create temp table truth_connections (id text primary key)');
    await loadChunks(
      client,
      sandbox.truth.connections().filter((c) => c.created_at >= '2025-07-01'),
      'insert into truth_connections select * from unnest($1::text[]) on conflict do nothing',
      [(c) => c.id],
    );
    const connections = await client.query<{ n: number }>(
      `select count(*)::int as n from truth_connections t
       where not exists (select 1 from validic.connection_events e where e.org_id = $1 and e.id = t.id)`,
      [org],
    );

    await client.query('create temp table truth_pushed (object text, id text)');
    await loadChunks(
      client,
      pushed,
      'insert into truth_pushed select * from unnest($1::text[], $2::text[])',
      [(p) => p.object, (p) => p.id],
    );
    const missingPushed = await client.query<{ n: number }>(
      `select count(*)::int as n from truth_pushed t
       where not exists (select 1 from validic.legacy_records l where l.object = t.object and l.id = t.id)`,
    );

    const c = counts.rows[0]!;
    const f = fresh.rows[0]!;
    return {
      truthRecords,
      storedRecords: c.stored,
      missing: c.missing,
      stale: c.stale,
      unexpected: c.unexpected,
      missingUsers: users.rows[0]!.n,
      missingConnectionEvents: connections.rows[0]!.n,
      missingPushed: missingPushed.rows[0]!.n,
      incompleteCells: cells.rows[0]!.n,
      sample: sample.rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
      freshness: { count: f.n, p50: f.p50 ?? 0, p99: f.p99 ?? 0, max: f.max ?? 0 },
      arrivedVia: Object.fromEntries(via.rows.map((r) => [r.arrived_via, r.n])),
    };
  } finally {
    await client.end();
  }
}
