/**
 * `validic-sync reconcile --from D --to D [--org id]`: pages `/connections` in ≤ 30-day windows
 * (the `connections.reconcile` job, run inline) and adds the connection events the warehouse lacks.
 * Events are keyed by id, so what the stream already stored is a no-op; of what is added, what was
 * created while the stream delivered is what it missed (before the stream ran, nothing was its to
 * miss). The totals also go to the `reconcile:last` cursor, which `status` shows. Then one
 * reconciliation of the stream (`streams.reconcile`, src/stream/reconcile-org.ts): the replay of the gaps
 * the reconciliation stream cannot reach, and a pass of that stream, which re-delivers every record and
 * event created since its last pass; what they add is what the stream lost, so one-shot users get the
 * same completeness as the worker. Without a reconciliation stream (the platform's 5 streams are taken,
 * or `stream.reconcile` is off) the provider's replay from where the last delivery left off (or --from)
 * does the pass's work, and the output says so. Its progress counts the `/connections` windows paged,
 * then says when the reconciliation runs.
 */
import type { Command } from 'commander';
import { selectOrganizations } from '../../config/load-config.ts';
import { UsageError } from '../../errors/index.ts';
import type { ReconcileOrgSummary } from '../../stream/reconcile-org.ts';
import { CONNECTION_EVENTS_SINCE } from '../../validic/platform-limits.ts';
import { reconcileLastWrite } from '../../warehouse/cursors.ts';
import { resultOf } from '../../worker/catalog-inline-runner.ts';
import type { CommandRunner } from '../command-runner.ts';
import { runInlineCommand } from '../inline-command.ts';
import { parseDateRange } from '../parse-options.ts';
import { createProgress } from '../progress.ts';
import { printReconciliation } from './stream.ts';

interface ReconcileOptions {
  from: string;
  to: string;
  org?: string;
}

export function registerReconcile(program: Command, run: CommandRunner): void {
  program
    .command('reconcile')
    .description('connection events: page /connections and add what the stream missed')
    .requiredOption('--from <date>', 'first day, YYYY-MM-DD (UTC), "today" or e.g. 30d')
    .requiredOption('--to <date>', 'last day (inclusive)')
    .option('--org <id>', 'only this organization (default: every configured one)')
    .action((options: ReconcileOptions) =>
      run(async (ctx) => {
        const { config, print } = ctx;
        const range = parseDateRange(options.from, options.to);
        const orgs = selectOrganizations(config, options.org);
        if (range.to < CONNECTION_EVENTS_SINCE) {
          throw new UsageError(
            `the platform keeps connection events from ${CONNECTION_EVENTS_SINCE} on; ${range.from}..${range.to} has none`,
            `give --to on or after ${CONNECTION_EVENTS_SINCE}`,
          );
        }
        const from = [range.from, CONNECTION_EVENTS_SINCE].sort().at(-1)!;
        const { planDateWindows } = await import('../../validic/platform-limits.ts');
        const { applyBatch } = await import('../../warehouse/loader/apply-batch.ts');
        const windows = planDateWindows(from, range.to);
        return runInlineCommand(ctx, {
          orgs,
          interrupted: 'reconcile interrupted; committed pages are kept',
          resumeFix: 'run the same command again (events already stored are not added twice)',
          retryHint: 'run the same command again to retry (events already stored are not added twice)',
          startOrg({ org, runner, runtime }) {
            const totals = { events: 0, added: 0, missed: 0, pages: 0, quarantined: 0 };
            let windowsDone = 0;
            let pass: ReconcileOrgSummary | undefined;
            const progress = createProgress({ label: `reconcile ${org.orgId}`, unit: 'windows' });
            progress.setTotal(windows.length);
            const detail = () => `${totals.events} connection events seen, ${totals.added} added`;
            runner.on('completed', (job, result) => {
              pass = resultOf('streams.reconcile', job, result) ?? pass;
              const window = resultOf('connections.reconcile', job, result);
              if (!window) return;
              totals.events += window.events;
              totals.added += window.inserted;
              totals.missed += window.missed;
              totals.pages += window.pages;
              totals.quarantined += window.quarantined;
              windowsDone += 1;
              // After /connections is paged: the pass's count is then the records the stream lost.
              // Without a reconciliation stream, the provider's replay from --from delivers instead.
              const paged = windowsDone === windows.length;
              progress.update(
                windowsDone,
                paged
                  ? `${detail()}; now the reconciliation of the stream, until it has caught up`
                  : detail(),
              );
              if (paged)
                runner.enqueue('streams.reconcile', {
                  orgId: org.orgId,
                  trigger: 'command',
                  replayFrom: from,
                });
            });
            for (const w of windows)
              runner.enqueue('connections.reconcile', {
                orgId: org.orgId,
                startDate: w.startDate,
                endDate: w.endDate,
              });
            return async ({ state, seconds }) => {
              progress.stop();
              if (state === 'done') {
                // Each window's job wrote its own `reconcile:last`; the command's totals replace them.
                const { events, missed } = totals;
                const cursor = reconcileLastWrite({ startDate: from, endDate: range.to, events, missed });
                await applyBatch(
                  runtime.warehouse,
                  { orgId: org.orgId, arrivedVia: 'poll', items: [] },
                  { cursors: [cursor] },
                );
              }
              print(`reconcile ${org.orgId} ${from}..${range.to}: ${state} in ${seconds} s`);
              print(
                `  windows ${windows.length} | pages ${totals.pages} | connection events seen ${totals.events}, added ${totals.added}, of which missed by the stream ${totals.missed}${totals.quarantined ? `, quarantined ${totals.quarantined}` : ''}`,
              );
              if (!org.stream.reconcile)
                print(
                  '  reconciliation stream: off (stream.reconcile is false): the replay delivers instead',
                );
              if (pass) printReconciliation(print, pass);
            };
          },
        });
      }),
    );
}
