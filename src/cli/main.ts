#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=50
/**
 * The `validic-sync` command. Each subcommand lives in commands/<name>.ts; this file only assembles
 * them and maps commander's own usage errors to exit code 2.
 */
import { Command, CommanderError } from 'commander';
import { loadEnvFile } from '../runtime/load-env-file.ts';
import { VERSION } from '../runtime/version.ts';
import type { GlobalOptions } from './command-runner.ts';
import { createCommandRunner, EXIT_USAGE } from './command-runner.ts';
import { registerAudit } from './commands/audit.ts';
import { registerBackfill } from './commands/backfill.ts';
import { registerDemo } from './commands/demo.ts';
import { registerLegacy } from './commands/legacy.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerReconcile } from './commands/reconcile.ts';
import { registerReport } from './commands/report.ts';
import { registerSandbox } from './commands/sandbox.ts';
import { registerSql } from './commands/sql.ts';
import { registerStatus } from './commands/status.ts';
import { registerStream } from './commands/stream.ts';
import { registerWorker } from './commands/worker.ts';

loadEnvFile();

const program = new Command('validic-sync')
  .description('Keep a PostgreSQL warehouse in step with the Validic platform (v2 API, streams, legacy v1).')
  .version(VERSION)
  .option('-c, --config <file>', 'JSON config file (default: config/default.json, or VALIDIC_SYNC_CONFIG)')
  .showHelpAfterError('(run validic-sync --help for usage)')
  .exitOverride();

const run = createCommandRunner(() => program.opts<GlobalOptions>());
registerMigrate(program, run);
registerBackfill(program, run);
registerLegacy(program, run);
registerSandbox(program, run);
registerStream(program, run);
registerWorker(program, run);
registerStatus(program, run);
registerReconcile(program, run);
registerAudit(program, run);
registerSql(program, run);
registerReport(program, run);
registerDemo(program, run);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version exit 0; everything else commander rejects is bad usage.
    process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
  } else {
    throw error;
  }
}
