import type { Command } from 'commander';
import { createPartitionsAhead } from '../../warehouse/warehouse-upkeep.ts';
import type { CommandRunner } from '../command-runner.ts';
import { withWarehouse } from '../command-runner.ts';

export function registerMigrate(program: Command, run: CommandRunner): void {
  program
    .command('migrate')
    .description(
      'apply the warehouse migrations and create the monthly partitions ahead (safe to run from several processes at once)',
    )
    .action(() =>
      run(async ({ config, log, print }) => {
        await withWarehouse(config, log, async (warehouse, applied) => {
          print(
            applied.length
              ? `applied ${applied.length} migration(s): ${applied.join(', ')}`
              : 'warehouse is up to date',
          );
          const created = await createPartitionsAhead(
            warehouse,
            new Date(),
            config.warehouse.partitionMonthsAhead,
          );
          if (created > 0) print(`created ${created} monthly partition(s) ahead`);
        });
      }),
    );
}
