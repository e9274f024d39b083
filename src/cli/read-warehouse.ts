/**
 * What the commands that only read the warehouse (`status`, `report`, `sql`) need of it: an embedded
 * warehouse that exists (reading one into being would create an empty one and print "(no rows)", as a
 * copied `sql` command without its `VALIDIC_DATA_DIR` did), and a login that may read what they read
 * (`status` and `report` read the sync's own bookkeeping in schema validic_sync, which `validic_analyst`
 * does not have).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config/schema.ts';
import { ConfigError, causeChain } from '../errors/index.ts';

/** Refuses an embedded warehouse folder that holds no database (exit 2, naming the settings). */
export function requireExistingWarehouse(config: Pick<Config, 'databaseUrl' | 'dataDir'>): void {
  if (config.databaseUrl) return;
  const dir = resolve(config.dataDir);
  // PGlite writes PostgreSQL's own data directory: PG_VERSION is its first file.
  if (existsSync(join(dir, 'PG_VERSION'))) return;
  throw new ConfigError([
    {
      key: 'VALIDIC_DATA_DIR (dataDir)',
      message: `there is no embedded warehouse in ${dir} (and DATABASE_URL is not set), so there is nothing to read`,
      fix: 'point VALIDIC_DATA_DIR at the folder a sync wrote (the demo writes .data/demo), or set DATABASE_URL; a sync command (backfill, worker) creates the embedded warehouse',
    },
  ]);
}

/**
 * A read the login may not make (SQLSTATE 42501 on the sync's schema) as one message that names the
 * login to use; anything else as it was.
 */
export function explainPermissionDenied(error: unknown, command: string): unknown {
  for (const link of causeChain(error)) {
    const { code, message } = link as { code?: unknown; message?: unknown };
    // The sync's schema, or the migrations' own tables, which every command checks before it reads.
    if (code === '42501' && typeof message === 'string' && /validic_sync|kysely_migration/.test(message))
      return new ConfigError([
        {
          key: 'DATABASE_URL',
          message: `${command} reads the sync's bookkeeping (schema validic_sync and the migrations' tables), which this login may not read (${message})`,
          fix: `run ${command} with the sync's own login (a role granted validic_loader, as the worker uses; docs/security.md); an analyst sees how fresh the data is with: validic-sync sql "select * from validic.data_freshness"`,
        },
      ]);
  }
  return error;
}
