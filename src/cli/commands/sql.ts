/**
 * `validic-sync sql "select …" [--json]`: a read-only query against the configured warehouse, so
 * analysts can reach the embedded (PGlite) warehouse without a PostgreSQL server. The statement runs in
 * a READ ONLY transaction: it cannot change data.
 */
import type { Command } from 'commander';
import { sql } from 'kysely';
import { UserFacingError } from '../../errors.ts';
import { formatTable } from '../format-table.ts';
import type { CommandRunner } from '../run-command.ts';
import { withWarehouse } from '../with-warehouse.ts';

export function registerSql(program: Command, run: CommandRunner): void {
  program
    .command('sql')
    .description(
      'run a read-only SQL query against the warehouse (embedded or PostgreSQL) and print the rows',
    )
    .argument('<query>', 'one SQL statement, e.g. "select * from validic.data_freshness"')
    .option('--json', 'print the rows as JSON lines')
    .action((query: string, options: { json?: boolean }) =>
      run(async ({ config, log, print }) => {
        const rows = await withWarehouse(config, log, (warehouse) =>
          warehouse.db
            .transaction()
            .execute(async (tx) => {
              await sql`set transaction read only`.execute(tx);
              const result = await sql.raw(query.trim().replace(/;\s*$/, '')).execute(tx);
              return result.rows as Record<string, unknown>[];
            })
            .catch((error: Error) => {
              throw new UserFacingError(`query failed: ${error.message}`, {
                fix: 'check the SQL; tables and columns are listed in docs/warehouse.md (writes are refused here)',
                cause: error,
              });
            }),
        );
        if (options.json) for (const row of rows) print(JSON.stringify(row));
        else {
          print(formatTable(rows));
          print(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
        }
      }),
    );
}
