import type { Command } from 'commander';
import { classifyFailure } from '../../errors/index.ts';
import {
  ADVISORY_LOCKS_FOR_LOADER_SQL,
  advisoryLocksOpenToPublic,
} from '../../warehouse/advisory-lock-access.ts';
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
          try {
            const created = await createPartitionsAhead(
              warehouse,
              new Date(),
              config.warehouse.partitionMonthsAhead,
            );
            if (created > 0) print(`created ${created} monthly partition(s) ahead`);
          } catch (error) {
            // A long read holds the default partitions: the migrations are done, the months can wait.
            if (classifyFailure(error).kind !== 'conflict') throw error;
            print(`warning: ${(error as Error).message}; warehouse.maintain and the loader will create them`);
          }
          const open = await advisoryLocksOpenToPublic(warehouse);
          if (open.length > 0) {
            print(
              `warning: every login of this database may take advisory locks (${open.length} functions open to PUBLIC), so an analyst can stall the loader (docs/security.md). Only a superuser can close them: run once, as one, in this database:\n${ADVISORY_LOCKS_FOR_LOADER_SQL}`,
            );
          }
        });
      }),
    );
}
