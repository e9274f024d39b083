/** `validic-sync report [--out file]`: a self-contained HTML page of what the warehouse holds. */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CommandRunner } from '../command-runner.ts';
import { withWarehouse } from '../command-runner.ts';
import { explainPermissionDenied, requireExistingWarehouse } from '../read-warehouse.ts';

export function registerReport(program: Command, run: CommandRunner): void {
  program
    .command('report')
    .description(
      'write a self-contained HTML report: records per day by type and source, freshness, quarantine, completeness audit',
    )
    .option('--out <file>', 'where to write it', 'validic-sync-report.html')
    .action((options: { out: string }) =>
      run(async ({ config, log, print }) => {
        const { readReportData } = await import('../../report/report-data.ts');
        const { renderReport } = await import('../../report/render-report.ts');
        requireExistingWarehouse(config);
        await withWarehouse(config, log, async (warehouse) => {
          const path = resolve(options.out);
          await writeFile(path, renderReport(await readReportData(warehouse.db, { config })));
          print(`wrote ${path}`);
        }).catch((error: unknown) => {
          throw explainPermissionDenied(error, 'report');
        });
      }),
    );
}
