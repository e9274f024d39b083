/**
 * Opens the configured warehouse (PostgreSQL, or the embedded PGlite without DATABASE_URL), brings its
 * schema up to date, runs `body`, and closes it whatever happens. For the commands that only read or
 * migrate; commands that sync build a whole runtime instead (src/worker/runtime.ts).
 */
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log/logger.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';

export async function withWarehouse<T>(
  config: Config,
  log: Logger,
  body: (warehouse: Warehouse, applied: string[]) => Promise<T>,
): Promise<T> {
  // Imported on use so that `--help` and light commands start fast.
  const { openWarehouse } = await import('../warehouse/open-warehouse.ts');
  const { migrateToLatest } = await import('../warehouse/migrate.ts');
  const warehouse = await openWarehouse({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log });
  try {
    return await body(warehouse, await migrateToLatest(warehouse.db));
  } finally {
    await warehouse.close();
  }
}
