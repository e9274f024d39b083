/**
 * `validic-sync backfill --from D --to D [--resources r,…] [--users uid,…] [--restart] [--org id]`:
 * users, v2 records and connection events for the range, resumable and idempotent.
 */
import type { Command } from 'commander';
import { selectOrganizations } from '../../config/load-config.ts';
import { emptyCounts, type LoadCounts } from '../../pipeline/batch.ts';
import { resultOf } from '../../worker/catalog-inline-runner.ts';
import type { CommandRunner } from '../command-runner.ts';
import { runInlineCommand } from '../inline-command.ts';
import { parseDateRange, parseList } from '../parse-options.ts';
import { createProgress } from '../progress.ts';

interface BackfillOptions {
  from: string;
  to: string;
  resources?: string;
  users?: string;
  restart?: boolean;
  org?: string;
  connections: boolean;
}

export function registerBackfill(program: Command, run: CommandRunner): void {
  program
    .command('backfill')
    .description('users, v2 records and connection events for a date range; resumable and idempotent')
    .requiredOption('--from <date>', 'first day, YYYY-MM-DD (UTC), "today" or e.g. 30d')
    .requiredOption('--to <date>', 'last day (inclusive)')
    .option('--resources <list>', 'comma-separated resources (default: all configured)')
    .option('--users <list>', 'comma-separated uids (default: every user)')
    .option('--no-connections', 'skip connection events')
    .option('--restart', 'start over instead of resuming an unfinished run with the same arguments')
    .option('--org <id>', 'only this organization (default: every configured one)')
    .action((options: BackfillOptions) =>
      run(async (ctx) => {
        const { config, log, print } = ctx;
        const range = parseDateRange(options.from, options.to);
        const orgs = selectOrganizations(config, options.org);
        const { toV2Resource } = await import('../../validic/platform-limits.ts');
        const resources = parseList(options.resources)?.map(toV2Resource);
        return runInlineCommand(ctx, {
          orgs,
          interrupted: 'backfill interrupted; committed windows are kept',
          resumeFix: 'run the same command again to resume where it stopped',
          retryHint: 'run the same command again to retry the windows that failed (finished ones are kept)',
          startOrg({ org, runner, runtime }) {
            const progress = createProgress({ label: `backfill ${org.orgId}` });
            const counts: LoadCounts = emptyCounts();
            let plan:
              | { runId: string; windows: number; alreadyDone: number; users: number; resumed: boolean }
              | undefined;
            let windowsDone = 0;
            const progressDetail = () =>
              `${counts.inserted} new, ${counts.updated} updated, ${counts.unchanged} unchanged`;
            runner.on('completed', (job, result) => {
              const planned = resultOf('records.backfill', job, result);
              if (planned) {
                plan = planned;
                progress.setTotal(planned.windows);
                progress.update(planned.alreadyDone + windowsDone, progressDetail());
                if (planned.resumed) {
                  log.info(
                    `resuming run ${planned.runId}: ${planned.alreadyDone} of ${planned.windows} windows already done`,
                  );
                }
                return;
              }
              const polled = resultOf('records.poll', job, result);
              if (!polled) return;
              windowsDone++;
              for (const key of Object.keys(counts) as (keyof LoadCounts)[]) counts[key] += polled[key];
              if (plan) progress.update(plan.alreadyDone + windowsDone, progressDetail());
            });
            runner.enqueue('records.backfill', {
              orgId: org.orgId,
              from: range.from,
              to: range.to,
              resources,
              uids: parseList(options.users),
              restart: options.restart === true,
              connections: options.connections,
            });
            return ({ state, seconds }) => {
              progress.stop();
              const stats = runtime.requestStats;
              print(`backfill ${org.orgId} ${range.from}..${range.to}: ${state} in ${seconds} s`);
              if (plan) {
                print(
                  `  users ${plan.users} | windows ${plan.windows}${plan.resumed ? ` (resumed run: ${plan.alreadyDone} were already done)` : ''} | requests ${stats.requests} (retries ${stats.retries})`,
                );
              }
              print(
                `  records: inserted ${counts.inserted}, updated ${counts.updated}, unchanged ${counts.unchanged}, stale ${counts.stale}, quarantined ${counts.quarantined}`,
              );
            };
          },
        });
      }),
    );
}
