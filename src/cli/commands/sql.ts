/**
 * `validic-sync sql "select …" [--json] [--timeout <seconds>]`: one read-only query against the
 * configured warehouse, so analysts can reach the embedded (PGlite) warehouse without a PostgreSQL
 * server. One statement, in a READ ONLY transaction with a statement timeout, always rolled back; on
 * PostgreSQL a superuser or BYPASSRLS login is refused (src/warehouse/read-only-query.ts).
 * Exit codes: 0 rows printed; 1 the query failed (bad SQL, what the login may not use, the timeout); 2
 * bad usage, a refused statement (a write, several statements, a role or mode change) or a refused login.
 */
import type { Command } from 'commander';
import { ConfigError, UsageError, UserFacingError } from '../../errors/index.ts';
import { escapeControlChars, formatTable, terminalSafeJson } from '../../report/format-table.ts';
import type { CommandRunner } from '../command-runner.ts';
import { requireExistingWarehouse } from '../read-warehouse.ts';

export const DEFAULT_SQL_TIMEOUT_SECONDS = 60;

function parseTimeout(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError(
      `--timeout ${value} is not a number of seconds`,
      'give --timeout as seconds > 0, e.g. 300',
    );
  return seconds;
}

export function registerSql(program: Command, run: CommandRunner): void {
  program
    .command('sql')
    .description(
      'run one read-only SQL statement against the warehouse (embedded or PostgreSQL) and print the rows',
    )
    .argument('<query>', 'one SQL statement, e.g. "select * from validic.data_freshness"')
    .option('--json', 'print the rows as JSON lines')
    .option(
      '--timeout <seconds>',
      `cancel the statement after this long (default ${DEFAULT_SQL_TIMEOUT_SECONDS})`,
    )
    .action((query: string, options: { json?: boolean; timeout?: string }) =>
      run(async ({ config, print }) => {
        requireExistingWarehouse(config);
        const seconds =
          options.timeout === undefined ? DEFAULT_SQL_TIMEOUT_SECONDS : parseTimeout(options.timeout);
        const { runReadOnlyQuery } = await import('../../warehouse/read-only-query.ts');
        const rows = await runReadOnlyQuery({
          databaseUrl: config.databaseUrl,
          dataDir: config.dataDir,
          query,
          timeoutMs: Math.round(seconds * 1000),
        }).catch((error: unknown) => {
          // Database messages can quote data (an invalid value, a key): escaped like the rows.
          if (error instanceof UserFacingError && !(error instanceof ConfigError))
            error.message = escapeControlChars(error.message);
          throw error;
        });
        if (options.json) for (const row of rows) print(terminalSafeJson(row));
        else {
          print(formatTable(rows));
          print(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
        }
      }),
    );
}
