/**
 * `validic-sync stream [--exit-when-idle S] [--org id]`: consumes each org's stream (with replay gap
 * filling) until Ctrl-C, or until every connection has been idle for S seconds: live, receiving pokes
 * and no data, with nothing waiting to commit (src/stream/STATE-MACHINE.md, "Idle"). Stopping flushes the current
 * micro-batch and commits its cursor before the connections close; a closing summary is printed.
 * A gap (an unclean end: a crash found at start-up, a drop, a stale connection) brings a pass of the
 * reconciliation stream forward, run here once the stream has caught up; the command is not idle while
 * one waits or runs. Gaps no stream reaches any more are backfilled over REST by jobs run here.
 */
import type { Command } from 'commander';
import { selectOrganizations } from '../../config/load-config.ts';
import { UsageError } from '../../errors/index.ts';
import type { ReconcileOrgSummary } from '../../stream/reconcile-org.ts';
import type { ReconcilePassSummary } from '../../stream/reconciliation.ts';
import type { OrgStreamSummary } from '../../stream/stream-summary.ts';
import { STREAM_POKE_INTERVAL_MS } from '../../validic/platform-limits.ts';
import type { CommandRunner } from '../command-runner.ts';
import { EXIT_FAILED, EXIT_OK } from '../command-runner.ts';
import { parsePositiveInt } from '../parse-options.ts';

interface StreamOptions {
  exitWhenIdle?: string;
  org?: string;
}

export function registerStream(program: Command, run: CommandRunner): void {
  program
    .command('stream')
    .description("consume the org's stream with replay gap filling, until Ctrl-C")
    .option(
      '--exit-when-idle <seconds>',
      'stop once every connection has been idle this long: live, receiving pokes and no data, nothing left to commit (a silent, reconnecting or replaying connection is not idle)',
    )
    .option('--org <id>', 'only this organization (default: every configured one)')
    .action((options: StreamOptions) =>
      run(async ({ config, log, signal, print }) => {
        const idleMs =
          options.exitWhenIdle === undefined
            ? undefined
            : parsePositiveInt('exit-when-idle', options.exitWhenIdle) * 1000;
        const hygienePokes = config.stream.maxPokesWithoutData;
        if (idleMs !== undefined && hygienePokes > 0 && idleMs >= hygienePokes * STREAM_POKE_INTERVAL_MS) {
          // Connection hygiene drops a quiet connection after that many pokes, and a dropped
          // connection is not idle: the command would never stop.
          throw new UsageError(
            `--exit-when-idle ${idleMs / 1000} is not shorter than connection hygiene's drop after ${hygienePokes} pokes (${(hygienePokes * STREAM_POKE_INTERVAL_MS) / 1000} s)`,
            `give --exit-when-idle below ${(hygienePokes * STREAM_POKE_INTERVAL_MS) / 1000}, or raise stream.maxPokesWithoutData (0 turns hygiene off)`,
          );
        }
        const orgs = selectOrganizations(config, options.org);
        const { openRuntime } = await import('../../worker/runtime.ts');
        const { createInlineRunner } = await import('../../worker/catalog-inline-runner.ts');
        const { startOrgStream } = await import('../../stream/run-org-stream.ts');
        const { consumerOptionsFromConfig } = await import('../../stream/consumer-options.ts');
        const { createPassScheduler } = await import('../../stream/reconciliation.ts');
        const { reconcileOrg } = await import('../../stream/reconcile-org.ts');
        const runtime = await openRuntime(config, log);
        const started = Date.now();
        const idle = new AbortController();
        const stop = AbortSignal.any([signal, idle.signal]);
        // REST backfills for gaps the replay cannot fill run here, beside the stream; an idle stop
        // lets them finish, Ctrl-C does not.
        const runner = createInlineRunner(runtime, signal, config.sync.concurrency);
        let timer: NodeJS.Timeout | undefined;
        try {
          const consumerOptions = consumerOptionsFromConfig(config.stream);
          // Passes run on Ctrl-C's signal, not the idle stop: an idle exit waits for them.
          const schedulers = orgs.map((org) => {
            const ready = { caughtUp: () => false };
            const scheduler = createPassScheduler({
              run: () =>
                reconcileOrg({
                  warehouse: runtime.warehouse,
                  org: runtime.org(org.orgId),
                  signal,
                  trigger: 'gap',
                  consumerOptions,
                  enqueue: (name, payload) => runner.enqueue(name, payload),
                  log,
                }),
              ready: () => ready.caughtUp(),
              signal,
              onError: (error) => log.error({ err: error, orgId: org.orgId }, 'reconciliation pass failed'),
            });
            return { org, scheduler, ready };
          });
          const startedOrgs = await Promise.allSettled(
            schedulers.map(async ({ org, scheduler, ready }) => {
              const handle = await startOrgStream({
                warehouse: runtime.warehouse,
                org: runtime.org(org.orgId),
                signal: stop,
                consumerOptions,
                enqueue: (name, payload) => runner.enqueue(name, payload),
                requestPass: () => scheduler.request(),
                log,
              });
              ready.caughtUp = () => handle.caughtUp();
              return handle;
            }),
          );
          const notStarted = startedOrgs.find((r) => r.status === 'rejected');
          if (notStarted) {
            // One org's stream could not start (bad token, stream limit): stop the others cleanly.
            idle.abort(new Error('start failed'));
            for (const r of startedOrgs) if (r.status === 'fulfilled') await r.value.done.catch(() => {});
            throw notStarted.reason;
          }
          const handles = startedOrgs.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          let idleStop = false;
          if (idleMs !== undefined) {
            // Checked a few times per idle period. Idle is witnessed by pokes (5 s apart on the
            // platform), so the stop lands up to one poke interval after S seconds of quiet.
            timer = setInterval(
              () => {
                const passesIdle = schedulers.every(({ scheduler }) => scheduler.idle());
                if (passesIdle && handles.every((h) => h.quietForMs() >= idleMs)) {
                  idleStop = true;
                  idle.abort(new Error('idle'));
                }
              },
              Math.max(50, Math.min(1000, idleMs / 4)),
            );
          }
          const results = await Promise.allSettled(handles.map((h) => h.done));
          clearInterval(timer);
          for (const { scheduler } of schedulers) await scheduler.drain();
          const failures = await runner.drain();
          const seconds = ((Date.now() - started) / 1000).toFixed(1);
          const how = idleStop ? `idle for ${idleMs! / 1000} s` : signal.aborted ? 'interrupted' : 'stopped';
          let failed = failures.length > 0;
          results.forEach((result, i) => {
            const handle = handles[i]!;
            if (result.status === 'rejected') failed = true;
            printSummary(print, handle.summary(), `${how} after ${seconds} s`);
            for (const reconciliation of schedulers[i]!.scheduler.passes())
              printReconciliation(print, reconciliation);
            if (result.status === 'rejected' && results.length > 1)
              print(`  failed: ${(result.reason as Error)?.message ?? String(result.reason)}`);
          });
          for (const { job, error } of failures.slice(0, 5))
            print(`  backfill for a gap failed: ${job.id}: ${error.message}`);
          const rejected = results.find((r) => r.status === 'rejected');
          if (rejected && results.length === 1) throw rejected.reason;
          return failed ? EXIT_FAILED : EXIT_OK;
        } finally {
          clearInterval(timer);
          await runtime.close();
        }
      }),
    );
}

function printSummary(print: (line: string) => void, s: OrgStreamSummary, how: string): void {
  const c = s.counters;
  const r = s.records;
  print(
    `stream ${s.orgId} "${s.streamName}" (id ${s.streamId}, ${s.connections} connection${s.connections === 1 ? '' : 's'}): ${how}`,
  );
  print(
    `  frames: data ${c.frames.data}, poke ${c.frames.poke}, other ${c.frames.other}, bad ${c.frames.bad}`,
  );
  print(
    `  records: inserted ${r.inserted}, updated ${r.updated}, unchanged ${r.unchanged}, stale ${r.stale}, quarantined ${r.quarantined}`,
  );
  print(
    `  connections: connects ${c.connects}, reconnects ${c.reconnects}, rebalancing 422 ${c.rebalancing}, stale ${c.staleDetections}, idle drops ${c.idleDrops}, errors ${c.errors}`,
  );
  print(
    `  replays ${c.replays} (caught up ${c.replaysCaughtUp}, left to another connection ${c.replaysShared}, replayed records already stored ${c.replaySkipped}), 429s ${c.rateLimited}, failed commits ${c.commitFailures}`,
  );
  print(
    `  gaps ${s.gaps} (unclean ends ${c.uncleanEnds}), left to the reconciliation stream; REST backfills enqueued ${s.backfillsEnqueued}`,
  );
}

export function printPass(print: (line: string) => void, p: ReconcilePassSummary): void {
  if (p.outcome === 'unavailable') {
    print(
      `  reconciliation stream ${p.streamName}: unavailable (${p.unavailable?.why}); ${p.unavailable?.fix}`,
    );
    return;
  }
  const what =
    p.source === 'replay'
      ? `gap replay ${p.passId} from ${p.replayDate}`
      : `reconciliation pass ${p.passId} on ${p.streamName}`;
  print(
    `  ${what}: ${p.outcome} in ${p.seconds} s; re-delivered ${p.frames}, missed by the stream ${p.missed} (inserted ${p.counts.inserted}, updated ${p.counts.updated}), gaps covered ${p.gapsCovered}${p.gapsCut > 0 ? `, cut ${p.gapsCut} (left to the replay)` : ''}`,
  );
}

/** One reconciliation: why there was no reconciliation stream, what died, each delivery, what is open. */
export function printReconciliation(print: (line: string) => void, r: ReconcileOrgSummary): void {
  if (r.unavailable)
    print(
      `  reconciliation stream ${r.unavailable.name}: unavailable (${r.unavailable.why}); the provider's replay delivers instead (${r.unavailable.fix})`,
    );
  if (r.interrupted > 0)
    print(`  deliveries interrupted by the death of their process: ${r.interrupted} (their gaps replayed)`);
  for (const delivery of r.deliveries) printPass(print, delivery);
  if (r.restBackfills > 0)
    print(`  REST backfills queued for gap days older than the replay serves: ${r.restBackfills}`);
  print(`  gaps open after it: ${r.openGaps}`);
}
