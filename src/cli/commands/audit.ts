/**
 * `validic-sync audit [--from D --to D] [--sample P] [--users uid,…] [--seed S] [--no-repair]
 * [--fail-on-drift] [--org id]`: the completeness audit as a command (src/audit/README.md). Draws a
 * simple random sample of the range's cells (user × resource × ≤ 30-day window), fetches each from the
 * platform, compares it with the warehouse, loads what is missing or stale (`arrived_via = 'audit'`),
 * and reports the outcomes with the completeness estimate and its 95 % interval. The run and each cell
 * are kept in validic_sync.audits and validic_sync.audit_cells; `status` shows the last run. Its
 * progress counts cells: audited of drawn.
 */
import type { Command } from 'commander';
import { formatShare } from '../../audit/completeness-interval.ts';
import { selectOrganizations } from '../../config/load-config.ts';
import { resultOf } from '../../worker/catalog-inline-runner.ts';
import type { CommandRunner } from '../command-runner.ts';
import { EXIT_FAILED } from '../command-runner.ts';
import { runInlineCommand } from '../inline-command.ts';
import { parseDateRange, parseList, parseShare } from '../parse-options.ts';
import { createProgress } from '../progress.ts';

interface AuditOptions {
  from: string;
  to: string;
  sample: string;
  users?: string;
  seed?: string;
  repair: boolean;
  failOnDrift?: boolean;
  org?: string;
}

export function registerAudit(program: Command, run: CommandRunner): void {
  program
    .command('audit')
    .description('compare a random sample of the warehouse with the platform; repair and report completeness')
    .option('--from <date>', 'first day, YYYY-MM-DD (UTC), "today" or e.g. 90d', '30d')
    .option('--to <date>', 'last day (inclusive)', 'today')
    .option('--sample <share>', 'share of the cells to audit: 5%, 100% or 0.05', '5%')
    .option('--users <list>', 'comma-separated uids (default: every user)')
    .option('--seed <text>', 'seed of the random draw (the same seed draws the same cells)')
    .option('--no-repair', 'report only: do not load what is missing or stale')
    .option('--fail-on-drift', 'exit 1 when any cell differs from the platform')
    .option('--org <id>', 'only this organization (default: every configured one)')
    .action((options: AuditOptions) =>
      run(async (ctx) => {
        const { config, print } = ctx;
        const range = parseDateRange(options.from, options.to);
        const sample = parseShare('sample', options.sample);
        const orgs = selectOrganizations(config, options.org);
        const { estimateCompleteness } = await import('../../audit/completeness-interval.ts');
        const { readAudit, readDriftCells } = await import('../../warehouse/audits.ts');
        let drift = false;
        const code = await runInlineCommand(ctx, {
          orgs,
          interrupted: 'audit interrupted; the cells audited so far are kept',
          resumeFix: 'run the audit again (cells already repaired are found equal)',
          retryHint: 'run the audit again to retry (cells already repaired are found equal)',
          startOrg({ org, runner, runtime }) {
            let auditId: number | undefined;
            const progress = createProgress({ label: `audit ${org.orgId}`, unit: 'cells' });
            let cellsDone = 0;
            runner.on('completed', (job, result) => {
              const audited = resultOf('records.audit', job, result);
              if (!audited) return;
              if ('population' in audited) {
                auditId = audited.auditId ?? undefined;
                progress.setTotal(audited.cells);
              } else {
                // Every cell of the job, also those an earlier attempt of it recorded.
                cellsDone += (job.payload as { cells?: readonly unknown[] }).cells?.length ?? audited.cells;
              }
              progress.update(cellsDone, '');
            });
            runner.enqueue('records.audit', {
              orgId: org.orgId,
              from: range.from,
              to: range.to,
              sample,
              uids: parseList(options.users),
              seed: options.seed,
              repair: options.repair,
            });
            return async ({ state, seconds }) => {
              progress.stop();
              print(`audit ${org.orgId} ${range.from}..${range.to}: ${state} in ${seconds} s`);
              const audit =
                auditId === undefined ? undefined : await readAudit(runtime.warehouse.db, auditId);
              if (!audit) return;
              if (audit.population === 0) {
                print(
                  '  nothing to audit: the warehouse knows no user of this organization yet (run `backfill` or the worker first)',
                );
                return;
              }
              const { cells, records } = audit.totals;
              const compared = cells.complete + cells.drift;
              print(
                `  run ${audit.id} | seed ${audit.seed} | cells drawn ${audit.planned} of ${audit.population} (${formatShare(audit.sample)}) | compared ${compared}${cells.failed ? `, failed ${cells.failed}` : ''}`,
              );
              print(`  cells: complete ${cells.complete}, drift ${cells.drift}`);
              print(
                `  records: equal ${records.equal}, missing ${records.missing}, stale ${records.stale}, extra ${records.extra}; ${audit.repair ? `repaired ${records.repaired}` : 'not repaired (--no-repair)'}`,
              );
              const estimate = estimateCompleteness(cells.complete, compared, audit.population);
              if (estimate)
                print(
                  `  completeness: ${formatShare(estimate.estimate)} of cells complete (95 % interval ${formatShare(estimate.lower)} to ${formatShare(estimate.upper, 'up')})`,
                );
              for (const cell of await readDriftCells(runtime.warehouse.db, audit.id, 10))
                print(
                  `  drift: ${cell.uid} ${cell.resource} ${cell.startDate}..${cell.endDate}: missing ${cell.missing}, stale ${cell.stale}, extra ${cell.extra} (${cell.driftIds.slice(0, 5).join(', ')}${cell.driftIds.length > 5 ? ', …' : ''})`,
                );
              if (cells.drift > 10)
                print(
                  `  … and ${cells.drift - 10} more cells with drift (validic_sync.audit_cells, audit_id ${audit.id})`,
                );
              if (cells.drift > 0) drift = true;
            };
          },
        });
        return code === 0 && drift && options.failOnDrift ? EXIT_FAILED : code;
      }),
    );
}
