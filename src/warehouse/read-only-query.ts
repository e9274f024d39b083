/**
 * The `sql` command's read-only queries, and the first keyword of a statement they are judged by.
 */

import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { ConfigError, UsageError, UserFacingError } from '../errors/index.ts';
import { connectError, DEFAULT_PGLITE_DIR, pgTypes } from './open-warehouse.ts';

/**
 * One analyst query that cannot change the warehouse (the `sql` command).
 *
 * What keeps it read-only:
 *
 * - It must start like a query (SELECT, WITH, VALUES, TABLE, EXPLAIN, SHOW; read-only-query.ts), so
 *   COMMIT, SET, COPY and DDL are refused with a clear message before reaching the database.
 * - One statement only: it goes over the extended query protocol (node-pg `queryMode: 'extended'`,
 *   PGlite's `query`), which refuses "commit; create table …" outright. The simple protocol, which
 *   kysely and node-pg use for a query without parameters, runs every statement of the text.
 * - `BEGIN READ ONLY` and a statement timeout, and the transaction is always rolled back.
 * - PostgreSQL: the login itself must not be able to get around that. A superuser (who can `COPY … TO
 *   PROGRAM`, `SET ROLE` anyone, read files) or a login with BYPASSRLS is refused before anything runs,
 *   for `session_user` and `current_user` alike (a `?options=-c role=…` URL changes only the latter),
 *   and so is a member of such a role (it could `set_config('role', …)` inside its one statement).
 *   The statement runs with the login's own rights: no `SET ROLE`, so row-level security sees the
 *   login as it is.
 * - PGlite (embedded): it always runs as its superuser, and the file is the user's own. The statement
 *   runs under `SET LOCAL ROLE validic_analyst` (reads `validic`, writes nothing, no superuser
 *   functions) on top of the single statement and the read-only transaction. A statement could still
 *   switch back with `select set_config('role', 'postgres', true)` (the session user is superuser),
 *   but only for the rest of itself, inside the read-only transaction: nothing runs after it but the
 *   rollback. PGlite ignores `statement_timeout` and blocks the thread it runs
 *   on, so the query runs in a worker thread that is terminated when the timeout passes.
 */
export interface ReadOnlyQueryOptions {
  /** PostgreSQL URL; absent: the embedded PGlite in `dataDir`. */
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  query: string;
  timeoutMs: number;
}

export type Row = Record<string, unknown>;

/** SQLSTATE of a statement cancelled by `statement_timeout`. */
const QUERY_CANCELED = '57014';

/**
 * The message and fix of a query the database did not run to its end: refused by the guards above (a
 * write, several statements, a change of the transaction's mode or role: exit 2, as a statement refused
 * before it reaches the database) or failed (bad SQL, what the login may not use, the timeout: exit 1).
 */
export function queryFailed(message: string, timeoutMs: number, cause?: unknown): UserFacingError {
  const code = (cause as { code?: string } | undefined)?.code;
  if (code === QUERY_CANCELED) return timedOut(timeoutMs, cause);
  const refused = refusal(message, code);
  if (refused) return refused;
  return new UserFacingError(`query failed: ${message}`, {
    fix: 'send one SELECT (or WITH … SELECT) statement; tables and columns are listed in docs/warehouse.md. Writes and several statements are refused here.',
    cause,
  });
}

/**
 * SQLSTATEs of a statement the read-only guards refuse: 25006 a write in the read-only transaction (a
 * writable CTE, a function that inserts, `nextval`), 25001 a change of the transaction's mode, 42501 a
 * role switch, and 42601 when it says several statements were sent. What the login itself may not use
 * (a table, a function: the rest of 42501) is the query failing on the login's rights, exit 1.
 */
function refusal(message: string, code: string | undefined): UsageError | undefined {
  const writes = code === '25006' || /read-only transaction/.test(message);
  const several = (code === '42601' || code === undefined) && /multiple commands/.test(message);
  const role = code === '42501' && /permission denied to set role/.test(message);
  if (!writes && !several && !role && code !== '25001') return undefined;
  return new UsageError(
    `the sql command refused the statement: ${message}`,
    'send one statement that only reads: SELECT, or WITH … SELECT without INSERT, UPDATE or DELETE, as the login it is. The sql command never writes',
  );
}

function timedOut(timeoutMs: number, cause?: unknown): UserFacingError {
  return new UserFacingError(`query cancelled: it ran longer than the ${timeoutMs / 1000} s timeout`, {
    fix: 'narrow the query (a WHERE on org_id or a date, a LIMIT), or raise the limit with --timeout <seconds>',
    cause,
  });
}

/** The statements `runReadOnlyQuery` sends at all: queries, and EXPLAIN / SHOW. */
export const QUERY_KEYWORDS = ['select', 'with', 'values', 'table', 'explain', 'show'];

export function runReadOnlyQuery(options: ReadOnlyQueryOptions): Promise<Row[]> {
  const query = options.query.trim().replace(/;\s*$/, '');
  const keyword = firstKeyword(query);
  if (!QUERY_KEYWORDS.includes(keyword)) {
    return Promise.reject(
      new UsageError(
        `the sql command runs queries only, not ${keyword ? keyword.toUpperCase() : 'an empty statement'}`,
        `send one statement that starts with ${QUERY_KEYWORDS.map((k) => k.toUpperCase()).join(', ')}`,
      ),
    );
  }
  return options.databaseUrl
    ? queryPostgres(options.databaseUrl, query, options.timeoutMs)
    : queryPGlite(options.dataDir ?? DEFAULT_PGLITE_DIR, query, options.timeoutMs);
}

async function queryPostgres(databaseUrl: string, query: string, timeoutMs: number): Promise<Row[]> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    types: pgTypes,
    application_name: 'validic-sync sql',
    connectionTimeoutMillis: 10_000,
  });
  // A socket that dies mid-query rejects the query; without a listener the 'error' event would crash.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw connectError(databaseUrl, error);
  }
  try {
    await refusePrivilegedLogin(client);
    await client.query('begin read only');
    await client.query("select set_config('statement_timeout', $1, true)", [`${timeoutMs}ms`]);
    try {
      // queryMode is node-pg's (8.11+) but not in @types/pg yet.
      const extended = { text: query, queryMode: 'extended' } as pg.QueryConfig;
      return (await client.query<Row>(extended)).rows;
    } catch (error) {
      throw queryFailed((error as Error).message, timeoutMs, error);
    }
  } finally {
    // Also after a `commit` sent as the statement: then there is nothing to roll back (a warning).
    await client.query('rollback').catch(() => {});
    await client.end().catch(() => {});
  }
}

async function refusePrivilegedLogin(client: pg.Client): Promise<void> {
  // Neither attribute is inherited, but a member of such a role can SET ROLE to it: members count too.
  const { rows } = await client.query<{ rolname: string; rolsuper: boolean; rolbypassrls: boolean }>(
    `select rolname, rolsuper, rolbypassrls from pg_roles
      where (rolsuper or rolbypassrls)
        and (pg_has_role(session_user, oid, 'MEMBER') or pg_has_role(current_user, oid, 'MEMBER'))
      order by rolname in (session_user, current_user) desc, rolname
      limit 3`,
  );
  if (rows.length === 0) return;
  const what = rows.map((r) => `${r.rolname} (${r.rolsuper ? 'superuser' : 'BYPASSRLS'})`).join(', ');
  throw new ConfigError([
    {
      key: 'DATABASE_URL',
      message: `the sql command refuses to run as, or as a member of, ${what}: such a login can write, read files or every org whatever the transaction says`,
      fix: 'connect with a login granted validic_analyst, e.g. `create role alice login password … in role validic_analyst` (docs/security.md, "Granting")',
    },
  ]);
}

/** The worker's answer (structured clone: Dates and numbers survive). */
export type WorkerAnswer =
  /** Opened and migrated: the statement runs now. */
  | { ready: true }
  | { rows: Row[] }
  /** `fix` set: an error opening or migrating the database (already user-facing). */
  | { error: { message: string; code?: string | undefined; fix?: string | undefined } };

function queryPGlite(dataDir: string, query: string, timeoutMs: number): Promise<Row[]> {
  // Same extension as this module: `.ts` from src/ (type stripping), `.js` from a dist/ build.
  const ext = extname(fileURLToPath(import.meta.url));
  const worker = new Worker(new URL(`./pglite-read-only-worker${ext}`, import.meta.url), {
    workerData: { dataDir, query },
  });
  return new Promise<Row[]>((resolve, reject) => {
    // The timeout starts once the database is open and migrated, so it is only ever the read-only
    // statement that is stopped: its transaction never commits, the data stays as it was.
    let timer: NodeJS.Timeout | undefined;
    const settle = (fn: () => void) => {
      clearTimeout(timer);
      fn();
    };
    worker.on('message', (answer: WorkerAnswer) => {
      if ('ready' in answer) {
        timer = setTimeout(() => {
          reject(timedOut(timeoutMs));
          void worker.terminate();
        }, timeoutMs);
        return;
      }
      settle(() => {
        if ('rows' in answer) resolve(answer.rows);
        else
          reject(
            answer.error.fix !== undefined
              ? new UserFacingError(answer.error.message, { fix: answer.error.fix })
              : queryFailed(answer.error.message, timeoutMs, answer.error),
          );
      });
    });
    worker.once('error', (error) => settle(() => reject(error)));
    worker.once('exit', (code) =>
      settle(() => reject(new Error(`the embedded database worker exited (code ${code}) without an answer`))),
    );
  });
}

/**
 * The keyword a SQL statement starts with, past whitespace, comments (`--` and nested `/* … *\/`) and
 * opening parentheses, lower-cased; '' when there is none. Not a parser: it is the first, cheap
 * check of `runReadOnlyQuery` (read-only-query.ts), which sends the text to the database only when it
 * starts like a query; the database's own refusals (one statement, read-only transaction, the login's
 * rights) hold whatever this lets through.
 */
export function firstKeyword(text: string): string {
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s|\(/.test(c)) i += 1;
    else if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (text.startsWith('/*', i)) i = afterBlockComment(text, i);
    else break;
  }
  return /^[a-z_]+/i.exec(text.slice(i))?.[0]?.toLowerCase() ?? '';
}

/** PostgreSQL block comments nest. */
function afterBlockComment(text: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < text.length) {
    if (text.startsWith('/*', i)) {
      depth += 1;
      i += 2;
    } else if (text.startsWith('*/', i)) {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else i += 1;
  }
  return text.length;
}
