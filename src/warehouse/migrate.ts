/**
 * Applies the numbered migrations of `migrations/` (the only way the schema changes).
 *
 * The folder is found relative to this module, so the same code works from `src/` (Node type
 * stripping, files end in `.ts`) and from a compiled `dist/` build (files end in `.js`): both trees
 * have `<root>/src/warehouse/migrate.*` and `<root>/migrations/`. Migration names drop the extension,
 * so a database migrated from `src/` is up to date for `dist/` too.
 *
 * Two processes may start at once (two workers, a worker and a CLI): the whole run holds a session
 * advisory lock on a dedicated connection, so the second waits and then finds nothing left to do.
 */
import { readdir } from 'node:fs/promises';
import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import { UserFacingError } from '../errors/index.ts';

/** Arbitrary constant shared by every validic-sync process: "migrations are running". */
const MIGRATION_LOCK_KEY = 7_436_112_001;

const MIGRATION_FILE = /^(\d{4}_[\w-]+)\.(ts|js|mjs)$/;

export const MIGRATIONS_FOLDER = new URL('../../migrations/', import.meta.url);

/** FileMigrationProvider-equivalent that imports by URL (works with `.ts` under type stripping). */
export class FolderMigrationProvider implements MigrationProvider {
  readonly #folder: URL;

  constructor(folder: URL = MIGRATIONS_FOLDER) {
    this.#folder = folder;
  }

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.#folder)).filter((f) => MIGRATION_FILE.test(f) && !f.endsWith('.d.ts'));
    const migrations: Record<string, Migration> = {};
    for (const file of files.sort()) {
      const name = MIGRATION_FILE.exec(file)![1]!;
      if (migrations[name]) continue; // both 0001_x.ts and 0001_x.js: the same migration
      const module = (await import(new URL(file, this.#folder).href)) as Partial<Migration>;
      if (typeof module.up !== 'function') {
        throw new Error(`migration ${file} does not export an up() function`);
      }
      migrations[name] = module as Migration;
    }
    return migrations;
  }
}

/** Applies every pending migration; returns the names applied by this call (empty when up to date). */
export async function migrateToLatest(
  db: Kysely<any>,
  provider: MigrationProvider = new FolderMigrationProvider(),
): Promise<string[]> {
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(conn);
    try {
      const migrator = new Migrator({ db: conn, provider });
      const { error, results } = await migrator.migrateToLatest();
      if (error) {
        const failed = results?.find((r) => r.status === 'Error')?.migrationName;
        throw new UserFacingError(
          `Migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`.replace(
            '  ',
            ' ',
          ),
          {
            fix: 'Check that the database user may create schemas, tables and roles, then run `validic-sync migrate` again.',
            cause: error,
          },
        );
      }
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
    }
  });
}
