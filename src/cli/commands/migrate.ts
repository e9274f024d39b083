import type { Command } from 'commander';
import type { CommandRunner } from '../run-command.ts';
import { withWarehouse } from '../with-warehouse.ts';

export function registerMigrate(program: Command, run: CommandRunner): void {
  program
    .command('migrate')
    .description('apply the warehouse migrations (safe to run from several processes at once)')
    .action(() =>
      run(async ({ config, log, print }) => {
        await withWarehouse(config, log, async (_warehouse, applied) => {
          print(
            applied.length
              ? `applied ${applied.length} migration(s): ${applied.join(', ')}`
              : 'warehouse is up to date',
          );
        });
      }),
    );
}
