import type { Command } from 'commander';
import type { CommandRunner } from '../run-command.ts';

export function registerMigrate(program: Command, run: CommandRunner): void {
  program
    .command('migrate')
    .description('apply the warehouse migrations (safe to run from several processes at once)')
    .action(() =>
      run(async ({ config, log, print }) => {
        // Imported on use so that `--help` and light commands start fast.
        const { openWarehouse } = await import('../../warehouse/open-warehouse.ts');
        const { migrateToLatest } = await import('../../warehouse/migrate.ts');
        const warehouse = await openWarehouse({
          databaseUrl: config.databaseUrl,
          dataDir: config.dataDir,
          log,
        });
        try {
          const applied = await migrateToLatest(warehouse.db);
          print(
            applied.length
              ? `applied ${applied.length} migration(s): ${applied.join(', ')}`
              : 'warehouse is up to date',
          );
        } finally {
          await warehouse.close();
        }
      }),
    );
}
