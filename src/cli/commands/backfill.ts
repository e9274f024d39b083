/**
 * `validic-sync backfill --from D --to D [--resources r,…] [--users uid,…] [--restart] [--yes] [--org id]`:
 * users, v2 records and connection events for the range, resumable and idempotent. Before it starts it
 * prints what the run will cost (windows, requests, hours at the token's paced rate; on a first run the
 * users are listed first, which the run then does not repeat), and beyond an hour it asks to go on when a
 * terminal is attached (`--yes` answers). Its progress counts ledger windows: done of planned.
 */
import type { Command } from 'commander';
import { selectOrganizations } from '../../config/load-config.ts';
import { UsageError, UserFacingError } from '../../errors/index.ts';
import { emptyCounts, type LoadCounts } from '../../pipeline/batch.ts';
import { resultOf } from '../../worker/catalog-inline-runner.ts';
import { backfillCost, CONFIRM_ABOVE_HOURS, formatBackfillCost } from '../backfill-cost.ts';
import type { CommandRunner } from '../command-runner.ts';
import { canAsk, confirm } from '../confirm.ts';
import { runInlineCommand } from '../inline-command.ts';
import { parseDateRange, parseList } from '../parse-options.ts';
import { createProgress } from '../progress.ts';

interface BackfillOptions {
  from: string;
  to: string;
  resources?: string;
  users?: string;
  restart?: boolean;
  yes?: boolean;
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
    .option('--yes', `start without asking, also when the estimate exceeds ${CONFIRM_ABOVE_HOURS} hour`)
    .option('--org <id>', 'only this organization (default: every configured one)')
    .action((options: BackfillOptions) =>
      run(async (ctx) => {
        const { config, log, print } = ctx;
        const range = parseDateRange(options.from, options.to);
        const orgs = selectOrganizations(config, options.org);
        const { toV2Resource } = await import('../../validic/platform-limits.ts');
        const { backfillRunArgs, estimateBackfill } = await import('../../warehouse/backfill-plan.ts');
        const { readCursor, usersFullSyncCursor } = await import('../../warehouse/cursors.ts');
        const resources = parseList(options.resources)?.map(toV2Resource);
        const uids = parseList(options.users);
        const unknownUids = new Set<string>();
        const code = await runInlineCommand(ctx, {
          orgs,
          interrupted: 'backfill interrupted; committed windows are kept',
          resumeFix: 'run the same command again to resume where it stopped',
          retryHint: 'run the same command again to retry the windows that failed (finished ones are kept)',
          async startOrg({ org, runner, runtime, runAlone }) {
            const db = runtime.warehouse.db;
            const args = backfillRunArgs({
              ...range,
              resources: resources ?? org.resources,
              uids,
              connections: options.connections,
            });
            // The estimate needs the users: on a first run they are listed now, and the run does not list
            // them again. A listing that failed is the run's to do again (it goes on with what it reads).
            let listUsers = true;
            if (!(await readCursor(db, org.orgId, usersFullSyncCursor()))) {
              const listed = await runAlone('users.sync', { orgId: org.orgId });
              listUsers = listed.failures.length > 0;
            }
            const estimate = await estimateBackfill(db, {
              orgId: org.orgId,
              args,
              restart: options.restart === true,
            });
            const cost = backfillCost(estimate, {
              requestsPerHour: org.requestsPerHour,
              listsUsers: listUsers,
            });
            print(`backfill ${org.orgId} ${range.from}..${range.to}: ${formatBackfillCost(estimate, cost)}`);
            if (cost.hours > CONFIRM_ABOVE_HOURS && !options.yes && canAsk()) {
              if (!(await confirm('Start it?')))
                throw new UserFacingError('backfill not started', {
                  fix: 'narrow --from/--to, --users or --resources, or run it with --yes (a run resumes where it stops)',
                });
            }

            const progress = createProgress({ label: `backfill ${org.orgId}`, unit: 'windows' });
            const counts: LoadCounts = emptyCounts();
            let plan:
              | { runId: string; windows: number; alreadyDone: number; users: number; resumed: boolean }
              | undefined;
            // Ledger windows completed by this run's jobs: a poll covers one per resource it fetched.
            let windowsDone = 0;
            const progressDetail = () =>
              `${counts.inserted} new, ${counts.updated} updated, ${counts.unchanged} unchanged`;
            runner.on('completed', (job, result) => {
              const planned = resultOf('records.backfill', job, result);
              if (planned) {
                plan = planned;
                for (const uid of planned.unknownUids) unknownUids.add(uid);
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
              const events = resultOf('connections.reconcile', job, result);
              if (polled) {
                windowsDone += (job.payload as { resources: readonly string[] }).resources.length;
                for (const key of Object.keys(counts) as (keyof LoadCounts)[]) counts[key] += polled[key];
              } else if (events) windowsDone += 1;
              else return;
              if (plan) progress.update(plan.alreadyDone + windowsDone, progressDetail());
            });
            runner.enqueue('records.backfill', {
              orgId: org.orgId,
              from: range.from,
              to: range.to,
              resources,
              uids,
              restart: options.restart === true,
              connections: options.connections,
              listUsers,
            });
            return ({ state, seconds }) => {
              progress.stop();
              const stats = runtime.requestStats;
              print(`backfill ${org.orgId} ${range.from}..${range.to}: ${state} in ${seconds} s`);
              if (plan) {
                print(
                  `  users ${plan.users} | windows ${plan.alreadyDone + windowsDone}/${plan.windows}${plan.resumed ? ` (resumed run: ${plan.alreadyDone} were already done)` : ''} | requests ${stats.requests} (retries ${stats.retries})`,
                );
              }
              print(
                `  records: inserted ${counts.inserted}, updated ${counts.updated}, unchanged ${counts.unchanged}, stale ${counts.stale}, quarantined ${counts.quarantined}`,
              );
            };
          },
        });
        if (unknownUids.size > 0)
          throw new UsageError(
            `--users names ${unknownUids.size === 1 ? 'a uid that is' : 'uids that are'} not (or no longer) a user of the organization: ${[...unknownUids].slice(0, 10).join(', ')}${unknownUids.size > 10 ? ', …' : ''} (skipped; the other users were backfilled)`,
            'check the uids against validic.users (validic-sync sql "select uid from validic.users"); a user the platform lists again is polled again',
          );
        return code;
      }),
    );
}
