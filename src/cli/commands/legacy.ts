/**
 * `validic-sync legacy --from T --to T [--objects o,…] [--org id]`: legacy (v1) records updated in the
 * range, fetched as consecutive `last_updated` windows of the latest endpoints (with the configured
 * overlap) and loaded idempotently. Running it again is harmless: unchanged records are not rewritten.
 */
import type { Command } from 'commander';
import { selectOrganizations } from '../../config/load-config.ts';
import { IncompleteListingError, UsageError } from '../../errors/index.ts';
import { emptyCounts, type LoadCounts } from '../../pipeline/batch.ts';
import { resultOf } from '../../worker/catalog-inline-runner.ts';
import type { CommandRunner } from '../command-runner.ts';
import { runInlineCommand } from '../inline-command.ts';
import { parseInstantOption, parseList } from '../parse-options.ts';
import { createProgress } from '../progress.ts';

interface LegacyOptions {
  from: string;
  to: string;
  objects?: string;
  org?: string;
}

export function registerLegacy(program: Command, run: CommandRunner): void {
  program
    .command('legacy')
    .description('legacy v1 records updated in a time range (latest windows with overlap); idempotent')
    .requiredOption('--from <time>', 'start: ISO 8601 time, YYYY-MM-DD (UTC midnight), "now" or e.g. 30d')
    .option('--to <time>', 'end, same forms', 'now')
    .option('--objects <list>', "comma-separated legacy objects (default: the org's legacy.objects)")
    .option('--org <id>', 'only this organization (default: every configured one)')
    .action((options: LegacyOptions) =>
      run(async (ctx) => {
        const { config, print } = ctx;
        const from = parseInstantOption('from', options.from);
        const to = parseInstantOption('to', options.to);
        if (from.getTime() >= to.getTime()) {
          throw new UsageError(
            `--from ${from.toISOString()} is not before --to ${to.toISOString()}`,
            'give a --from earlier than --to',
          );
        }
        const { toLegacyObject } = await import('../../validic/platform-limits.ts');
        const objects = parseList(options.objects)?.map(toLegacyObject);
        const orgs = selectOrganizations(config, options.org);
        return runInlineCommand(ctx, {
          orgs,
          interrupted: 'legacy sync interrupted; committed windows are kept',
          resumeFix: 'run the same command again (records already loaded are not rewritten)',
          retryHint: 'run the same command again to fetch the windows that failed (loaded records are kept)',
          startOrg({ org, runner, runtime }) {
            const stats = runtime.requestStats;
            const requestsBefore = stats.requests;
            const retriesBefore = stats.retries;
            const progress = createProgress({ label: `legacy ${org.orgId}` });
            const counts: LoadCounts = emptyCounts();
            let records = 0;
            let windowsDone = 0;
            let planned: { windows: number; objects: { object: string; windows: number }[] } | undefined;
            const deletes = { checked: 0, deleted: 0, pending: new Map<string, number>() };
            const detail = () =>
              `${records} records: ${counts.inserted} new, ${counts.updated} updated, ${counts.unchanged} unchanged`;
            runner.on('completed', (job, result) => {
              const sync = resultOf('legacy.sync', job, result);
              if (sync) {
                planned = sync;
                progress.setTotal(sync.windows);
                progress.update(windowsDone, detail());
                return;
              }
              const latest = resultOf('legacy.latest', job, result);
              if (!latest) return;
              windowsDone++;
              records += latest.records;
              for (const key of Object.keys(counts) as (keyof LoadCounts)[]) counts[key] += latest[key];
              deletes.checked += latest.deleteChecks;
              deletes.deleted += latest.deleted;
              deletes.pending.set(latest.object, latest.deleteChecksPending);
              progress.update(windowsDone, detail());
            });
            runner.enqueue('legacy.sync', {
              orgId: org.orgId,
              objects: objects ?? org.legacy.objects,
              from: from.toISOString(),
              to: to.toISOString(),
            });
            return ({ state, seconds, failures }) => {
              progress.stop();
              print(
                `legacy ${org.orgId} ${from.toISOString()}..${to.toISOString()}: ${state} in ${seconds} s`,
              );
              if (planned) {
                print(
                  `  objects ${planned.objects.map((o) => o.object).join(',')} | windows ${windowsDone}/${planned.windows} | requests ${stats.requests - requestsBefore} (retries ${stats.retries - retriesBefore})`,
                );
              }
              print(
                `  records ${records}: inserted ${counts.inserted}, updated ${counts.updated}, unchanged ${counts.unchanged}, quarantined ${counts.quarantined}`,
              );
              const pending = [...deletes.pending.values()].reduce((sum, n) => sum + n, 0);
              if (deletes.checked > 0 || pending > 0) {
                print(
                  `  deletes: ${deletes.deleted} marked deleted of ${deletes.checked} checked by id${pending > 0 ? `; ${pending} left for later checks within the budget share (legacy.deleteChecksPerPass, legacy.deleteCheckShare)` : ''}`,
                );
              }
              const incomplete = failures.filter(({ error }) => error instanceof IncompleteListingError);
              if (incomplete.length > 0) {
                print(
                  `  incomplete listings: ${incomplete.length} window(s) listed fewer records than the platform counted, or repeated a page; the records read are loaded, and the cursor of their object stays before them`,
                );
              }
            };
          },
        });
      }),
    );
}
