/**
 * Worker thread of `runReadOnlyQuery` on the embedded database (read-only-query.ts says why a
 * thread): opens PGlite, brings the schema up to date as every command does, runs the one statement
 * as `validic_analyst` in a read-only transaction that is rolled back, and posts the rows back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import { UserFacingError } from '../errors/index.ts';
import { migrateToLatest } from './migrate.ts';
import { openWarehouse, type Warehouse } from './open-warehouse.ts';
import type { Row, WorkerAnswer } from './read-only-query.ts';

const { dataDir, query } = workerData as { dataDir: string; query: string };

async function answer(): Promise<WorkerAnswer> {
  let warehouse: Warehouse | undefined;
  try {
    warehouse = await openWarehouse({ dataDir });
    await migrateToLatest(warehouse.db);
  } catch (error) {
    await warehouse?.close().catch(() => {});
    const fix = error instanceof UserFacingError ? (error.fix ?? '') : 'check the embedded database folder';
    return { error: { message: (error as Error).message, fix } };
  }
  parentPort!.postMessage({ ready: true } satisfies WorkerAnswer);
  try {
    // One connection (the dialect's mutex) for the whole transaction. kysely sends a query without
    // parameters to PGlite's `query`, which is the extended protocol: one statement only.
    const rows = await warehouse.db.connection().execute(async (conn) => {
      await sql`begin read only`.execute(conn);
      try {
        await sql`set local role validic_analyst`.execute(conn);
        return (await sql.raw<Row>(query).execute(conn)).rows;
      } finally {
        await sql`rollback`.execute(conn).catch(() => {});
      }
    });
    return { rows };
  } catch (error) {
    return { error: { message: (error as Error).message, code: (error as { code?: string }).code } };
  } finally {
    await warehouse.close().catch(() => {});
  }
}

parentPort!.postMessage(await answer());
