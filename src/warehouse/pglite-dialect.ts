/**
 * A Kysely dialect for PGlite (the embedded Postgres used when no DATABASE_URL is set).
 *
 * Hand-written because the published `kysely-pglite-dialect` does not support PGlite 0.5, and kysely's
 * own PGlite driver shares one connection object without a lock: a query issued outside a transaction
 * while a transaction is open runs INSIDE that transaction (and is rolled back with it). The
 * driver is small: PGlite is ONE connection to a single-user Postgres, so the driver hands out that one
 * connection and serializes access with a mutex. A transaction holds the mutex from `acquireConnection`
 * to `releaseConnection`, so no other query can slip into it (exactly what a pool of size 1 gives).
 * Consequence to keep in mind: inside a transaction use the transaction's executor, never the outer
 * `db`, or the second acquire waits for the first forever.
 */
import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** A FIFO mutex: each `lock()` resolves with the function that releases it. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();

  lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.#tail;
    this.#tail = previous.then(() => next);
    return previous.then(() => release);
  }
}

export class PGliteConnection implements DatabaseConnection {
  readonly pglite: PGlite;

  constructor(pglite: PGlite) {
    this.pglite = pglite;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.pglite.query<R>(compiledQuery.sql, [...compiledQuery.parameters]);
    const affected = result.affectedRows;
    const isWrite = /^\s*(insert|update|delete|merge)\b/i.test(compiledQuery.sql);
    return {
      rows: result.rows,
      ...(isWrite && affected !== undefined ? { numAffectedRows: BigInt(affected) } : {}),
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported; the generator only throws.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite dialect: streaming queries are not supported');
  }
}

class PGliteDriver implements Driver {
  readonly #pglite: PGlite;
  readonly #connection: PGliteConnection;
  readonly #mutex = new Mutex();
  readonly #releases = new WeakMap<DatabaseConnection, () => void>();
  readonly #closeOnDestroy: boolean;

  constructor(pglite: PGlite, closeOnDestroy: boolean) {
    this.#pglite = pglite;
    this.#connection = new PGliteConnection(pglite);
    this.#closeOnDestroy = closeOnDestroy;
  }

  async init(): Promise<void> {
    await this.#pglite.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.#mutex.lock();
    this.#releases.set(this.#connection, release);
    return this.#connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const parts = ['begin'];
    if (settings.isolationLevel) parts.push(`isolation level ${settings.isolationLevel}`);
    if (settings.accessMode) parts.push(settings.accessMode);
    await connection.executeQuery(CompiledQuery.raw(parts.join(' ')));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const release = this.#releases.get(connection);
    this.#releases.delete(connection);
    release?.();
  }

  async destroy(): Promise<void> {
    if (this.#closeOnDestroy && !this.#pglite.closed) await this.#pglite.close();
  }
}

export interface PGliteDialectConfig {
  pglite: PGlite;
  /** Close the PGlite instance when the Kysely instance is destroyed. Default true. */
  closeOnDestroy?: boolean;
}

export class PGliteDialect implements Dialect {
  readonly #config: PGliteDialectConfig;

  constructor(config: PGliteDialectConfig) {
    this.#config = config;
  }

  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteDriver(this.#config.pglite, this.#config.closeOnDestroy ?? true);
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }
}
