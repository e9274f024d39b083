/**
 * Opens the warehouse: PostgreSQL through a pg.Pool when a database URL is given, otherwise the
 * embedded PGlite persisted in `dataDir` (the README's "Configuration": no `DATABASE_URL`, the embedded one). Both expose the same
 * `Warehouse`: a kysely `db`, `transaction(fn)` whose executor can also bulk-load with COPY, and
 * `close()`.
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { UserFacingError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { redactUrl } from '../redact/redact-secrets.ts';
import { withSpan } from '../telemetry/tracer.ts';
import { type CopyRow, copyStatement, encodeCopyChunks } from './copy-text-format.ts';
import type { Database } from './database.ts';
import { lockEmbeddedWarehouse } from './embedded-lock.ts';
import { PGliteDialect } from './pglite-dialect.ts';

export type CopyRows = (table: string, columns: readonly string[], rows: Iterable<CopyRow>) => Promise<void>;

export interface WarehouseTransaction {
  /** Runs inside the transaction. Do not call `transaction()` on it. */
  db: Kysely<Database>;
  /** Bulk-loads rows with COPY (text format) into `table`, e.g. a temp staging table, inside the transaction. */
  copyRows: CopyRows;
  /** The rows of the last statement of `TransactionOptions.begin`, when given. */
  beginRows?: Record<string, unknown>[];
}

export interface Warehouse {
  db: Kysely<Database>;
  kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction (BEGIN … COMMIT, ROLLBACK when it throws). */
  transaction<T>(fn: (tx: WarehouseTransaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** COPY outside any transaction (its own connection). */
  copyRows: CopyRows;
  close(): Promise<void>;
}

export interface TransactionOptions {
  /**
   * Statements sent with BEGIN in the same round trip (simple query protocol: literals only, no
   * parameters; several separated by `;`). The rows of the last one are `tx.beginRows`. Each statement
   * takes its own snapshot, so a query after a lock sees everything committed before it was granted.
   * The loader's round-trip savings are built on this (loader/load-transaction.ts).
   */
  begin?: string;
}

export interface OpenWarehouseOptions {
  /** PostgreSQL URL. Absent: the embedded PGlite in `dataDir`. */
  databaseUrl?: string | undefined;
  /** PGlite data directory; default `.data/pglite`. Ignored with `databaseUrl`. */
  dataDir?: string | undefined;
  log?: Logger | undefined;
  /** pg.Pool size; default 10. */
  maxConnections?: number | undefined;
}

export const DEFAULT_PGLITE_DIR = '.data/pglite';

const OID = { int8: 20, numeric: 1700, date: 1082 } as const;

/**
 * Type parsers, chosen on purpose:
 * - int8 → number: our bigints are counts and ids far below 2^53; strings would leak into arithmetic.
 * - numeric → number: metric values are measurements, not money; a float is what callers expect.
 * - date → the 'YYYY-MM-DD' text as is: pg's default makes a Date at LOCAL midnight, which shifts the
 *   day in any time zone west of UTC.
 * - timestamptz → Date (both drivers' default): an unambiguous instant that serializes to ISO 8601
 *   in JSON; the text form ('2024-01-01 00:00:00+00') is not ISO and would need reparsing anyway.
 */
const customParsers: Record<number, (value: string) => unknown> = {
  [OID.int8]: (value) => Number(value),
  [OID.numeric]: (value) => Number.parseFloat(value),
  [OID.date]: (value) => value,
};

export const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    const custom = customParsers[oid];
    if (custom && format !== 'binary') return custom;
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as unknown as pg.CustomTypesConfig;

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  '3D000', // database does not exist
  '28P01', // password authentication failed
  '28000', // invalid authorization
  '57P03', // cannot connect now (starting up)
]);

/** The URL for messages and logs: password and secret parameters masked. */
export function displayDatabaseUrl(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    return redactUrl(url.href);
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

/**
 * Which warehouse a command writes, for its log and its first lines: PostgreSQL's host, port, database
 * and user (never the password), or the embedded one's folder, named as the default it is.
 */
export function describeWarehouse(options: {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
}): string {
  if (!options.databaseUrl) {
    return `the embedded warehouse (PGlite) in ${resolve(options.dataDir ?? DEFAULT_PGLITE_DIR)}, as DATABASE_URL is not set`;
  }
  try {
    const url = new URL(options.databaseUrl);
    const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || "(the user's default database)";
    const user = url.username ? ` as ${decodeURIComponent(url.username)}` : '';
    return `PostgreSQL database ${database} on ${url.hostname || 'the local socket'}:${url.port || 5432}${user} (DATABASE_URL)`;
  } catch {
    return 'PostgreSQL at an unparseable DATABASE_URL';
  }
}

function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /timeout|connect|terminated/i.test(message);
}

/** What a failed first connection becomes: a readable error naming DATABASE_URL when unreachable. */
export function connectError(databaseUrl: string, error: unknown): unknown {
  if (!isUnreachable(error)) return error;
  return new UserFacingError(
    `Cannot reach the PostgreSQL database at ${displayDatabaseUrl(databaseUrl)}: ${(error as Error).message || (error as { code?: string }).code}`,
    {
      fix: 'Check DATABASE_URL (host, port, database name, user, password) and that PostgreSQL is running and accepts connections; or unset DATABASE_URL to use the embedded database.',
      cause: error,
    },
  );
}

/** `application_name` of this process's PostgreSQL sessions (`pg_stat_activity`). */
export function warehouseApplicationName(pid = process.pid): string {
  return `validic-sync pid ${pid}`;
}

export async function openWarehouse(options: OpenWarehouseOptions = {}): Promise<Warehouse> {
  const log = options.log ?? silentLogger;
  const warehouse = options.databaseUrl
    ? await openPostgres(options.databaseUrl, options.maxConnections ?? 10, log)
    : await openPGlite(options.dataDir ?? DEFAULT_PGLITE_DIR);
  const description = describeWarehouse(options);
  log.info({ warehouse: description }, `warehouse: ${description}`);
  return warehouse;
}

async function openPostgres(databaseUrl: string, max: number, log: Logger): Promise<Warehouse> {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    types: pgTypes,
    connectionTimeoutMillis: 10_000,
    // The pid tells a DBA (and the fault tests) which process a session belongs to: a session can
    // outlive its process by a moment, finishing a COMMIT the process sent just before it died.
    application_name: warehouseApplicationName(),
  });
  // An idle client that dies (server restart) must not crash the process; the next query reconnects.
  pool.on('error', (error) => log.warn({ err: error }, 'idle PostgreSQL connection failed'));
  // A checked-out client whose socket dies (server killed, connection cut) also emits 'error'; with no
  // listener that event crashes the process. The query in flight still rejects with the error, and
  // the pool discards the broken client on release.
  pool.on('connect', (client) => {
    client.on('error', (error: Error & { code?: string }) =>
      log.warn({ error: error.message, code: error.code }, 'PostgreSQL connection failed'),
    );
  });
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end().catch(() => {});
    throw connectError(databaseUrl, error);
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });

  const copyWith = (client: pg.PoolClient): CopyRows => {
    return (table, columns, rows) =>
      withSpan('warehouse.copy', { 'db.collection.name': table }, async () => {
        const stream = client.query(copyFrom(copyStatement(table, columns, 'stdin')));
        await pipeline(Readable.from(encodeCopyChunks(rows)), stream);
      });
  };

  return {
    db,
    kind: 'postgres',
    async transaction(fn, options) {
      const client = await pool.connect();
      // A kysely instance bound to this one client, so kysely queries and COPY share the transaction.
      const single = {
        connect: async () => ({
          query: (...args: unknown[]) => (client.query as (...a: unknown[]) => unknown)(...args),
          release: () => {},
        }),
        end: async () => {},
        options: {},
      };
      const trxDb = new Kysely<Database>({ dialect: new PostgresDialect({ pool: single as never }) });
      let broken: unknown;
      try {
        // Simple query protocol (no parameters), so BEGIN and options.begin share one round trip.
        const extra = options?.begin;
        const begun = (await client.query(extra ? `begin; ${extra}` : 'begin')) as unknown as
          | pg.QueryResult
          | pg.QueryResult[];
        const tx: WarehouseTransaction = { db: trxDb, copyRows: copyWith(client) };
        if (extra) tx.beginRows = (Array.isArray(begun) ? begun.at(-1) : begun)?.rows ?? [];
        const result = await fn(tx);
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback').catch((rollbackError: unknown) => {
          broken = rollbackError;
        });
        throw error;
      } finally {
        client.release(broken instanceof Error ? broken : undefined);
      }
    },
    async copyRows(table, columns, rows) {
      const client = await pool.connect();
      try {
        await copyWith(client)(table, columns, rows);
      } finally {
        client.release();
      }
    },
    async close() {
      await db.destroy();
    },
  };
}

async function openPGlite(dataDir: string): Promise<Warehouse> {
  await mkdir(dataDir, { recursive: true });
  const parsers = Object.fromEntries(
    Object.entries(customParsers).map(([oid, parse]) => [oid, (value: string) => parse(value)]),
  );
  const unlock = lockEmbeddedWarehouse(dataDir);
  let pglite: PGlite;
  try {
    pglite = await PGlite.create({ dataDir, parsers });
  } catch (error) {
    unlock();
    throw new UserFacingError(
      `Cannot open the embedded database in ${dataDir}: ${(error as Error).message}`,
      {
        fix: `Make sure no other validic-sync process uses ${dataDir}, or move the folder away to start afresh; or set DATABASE_URL to use PostgreSQL.`,
        cause: error,
      },
    );
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });

  // PGlite reads COPY data from a virtual file the query is given as a Blob.
  const copyRows: CopyRows = (table, columns, rows) =>
    withSpan('warehouse.copy', { 'db.collection.name': table }, async () => {
      const blob = new Blob([...encodeCopyChunks(rows)]);
      await pglite.query(copyStatement(table, columns, `'/dev/blob'`), [], { blob });
    });

  return {
    db,
    kind: 'pglite',
    async transaction(fn, options) {
      // connection() holds the dialect's mutex for the whole callback, so the raw pglite.query used
      // by copyRows runs inside this transaction and nothing else interleaves.
      return db.connection().execute(async (conn) => {
        await pglite.query('begin');
        try {
          // One connection: nothing contends, but the statements are the same as on PostgreSQL.
          const tx: WarehouseTransaction = { db: conn, copyRows };
          if (options?.begin) {
            const results = await pglite.exec(options.begin);
            tx.beginRows = (results.at(-1)?.rows ?? []) as Record<string, unknown>[];
          }
          const result = await fn(tx);
          await pglite.query('commit');
          return result;
        } catch (error) {
          await pglite.query('rollback').catch(() => {});
          throw error;
        }
      });
    },
    async copyRows(table, columns, rows) {
      await db.connection().execute(() => copyRows(table, columns, rows));
    },
    async close() {
      try {
        await db.destroy();
      } finally {
        unlock();
      }
    },
  };
}

/** One round trip to the database: the worker's readiness check. */
export async function pingWarehouse(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}
