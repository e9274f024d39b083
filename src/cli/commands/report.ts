/** `validic-sync report [--out file]`: a self-contained HTML page of what the warehouse holds. */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CommandRunner } from '../run-command.ts';

export function registerReport(program: Command, run: CommandRunner): void {
  program
    .command('report')
    .description(
      'write a self-contained HTML report: records per day by type and source, freshness, quarantine',
    )
    .option('--out <file>', 'where to write it', 'validic-sync-report.html')
    .action((options: { out: string }) =>
      run(async ({ config, log, print }) => {
        const { openWarehouse } = await import('../../warehouse/open-warehouse.ts');
        const { migrateToLatest } = await import('../../warehouse/migrate.ts');
        const { readReportData } = await import('../../report/report-data.ts');
        const { renderReport } = await import('../../report/render-report.ts');
        const warehouse = await openWarehouse({
          databaseUrl: config.databaseUrl,
          dataDir: config.dataDir,
          log,
        });
        try {
          await migrateToLatest(warehouse.db);
          const path = resolve(options.out);
          await writeFile(path, renderReport(await readReportData(warehouse.db)));
          print(`wrote ${path}`);
        } finally {
          await warehouse.close();
        }
      }),
    );
}
