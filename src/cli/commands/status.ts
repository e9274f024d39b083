/**
 * `validic-sync status [--json]`: where the sync stands. Per organization: users and their last full
 * sync, records and lag (now − newest platform created_at, now − newest ingest), the stream's
 * cursors, gaps and slot holders, the last reconciliation, legacy cursors, running and failed
 * backfill runs with windows done/pending, quarantine counts by reason, the request budget's plan
 * (requests per hour by kind of work, the recent poll's sweep period planned, configured and measured);
 * with REDIS_URL also queue depths,
 * failed jobs and schedules. Read-only; works on the embedded warehouse too.
 */
import type { Command } from 'commander';
import type { FirstSyncStatus } from '../../budget/first-sync.ts';
import { formatPeriod } from '../../budget/plan-request-budget.ts';
import type { BudgetStatus } from '../../budget/read-budget-plan.ts';
import { UserFacingError } from '../../errors/index.ts';
import type { CursorStatus, SyncStatus } from '../../metrics/sync-status.ts';
import { formatColumns } from '../../report/format-table.ts';
import { reconcileStreamName } from '../../stream/reconciliation.ts';
import type { CommandRunner } from '../command-runner.ts';
import { EXIT_OK } from '../command-runner.ts';
import { formatAuditStatus } from '../format-audit-status.ts';
import { explainPermissionDenied, requireExistingWarehouse } from '../read-warehouse.ts';

interface StatusOptions {
  json?: boolean;
}

export function registerStatus(program: Command, run: CommandRunner): void {
  program
    .command('status')
    .description(
      'cursors, lag, backfill runs, the request budget plan, queue depths and failed jobs, quarantine, stream state',
    )
    .option('--json', 'print one JSON document instead of tables')
    .action((options: StatusOptions) =>
      run(async ({ config, log, print }) => {
        requireExistingWarehouse(config);
        const { openWarehouse, describeWarehouse } = await import('../../warehouse/open-warehouse.ts');
        const { collectSyncStatus } = await import('../../metrics/sync-status.ts');
        const warehouse = await openWarehouse({
          databaseUrl: config.databaseUrl,
          dataDir: config.dataDir,
          log,
        });
        const closers: (() => Promise<void> | void)[] = [() => warehouse.close()];
        try {
          let queue: Parameters<typeof collectSyncStatus>[0]['queue'];
          let slots: Parameters<typeof collectSyncStatus>[0]['slots'];
          let queueError: string | undefined;
          let grantedPerHour: ((orgId: string) => Promise<number | undefined>) | undefined;
          if (config.redisUrl) {
            const { connectRedis } = await import('../../runtime/connect-redis.ts');
            const { openJobQueue } = await import('../../queue/job-queue.ts');
            const { createStreamSlots } = await import('../../worker/stream-supervisor.ts');
            const redis = await connectRedis(config.redisUrl, { timeoutMs: 3000 }).catch((error: unknown) => {
              // The warehouse side is still worth showing when Redis is away.
              queueError = (error as Error).message;
              return undefined;
            });
            if (redis) {
              closers.unshift(() => redis.disconnect());
              const jobQueue = openJobQueue({
                redis,
                prefix: config.redisPrefix,
                catalog: {},
                keep: { keepCompleted: 0, keepFailed: 0 },
              });
              closers.unshift(() => jobQueue.close());
              queue = {
                counts: () => jobQueue.counts(),
                failed: (limit) => jobQueue.failed(limit),
                schedulers: async () =>
                  (await jobQueue.queue.getJobSchedulers(0, -1)).map((s) => ({
                    id: s.key,
                    name: s.name,
                    every: s.every ?? undefined,
                    next: s.next ?? undefined,
                  })),
              };
              slots = createStreamSlots({ redis, prefix: config.redisPrefix });
              const { readGrantedPerHour } = await import('../../budget/request-budget.ts');
              grantedPerHour = async (orgId) => {
                const org = config.organizations.find((o) => o.orgId === orgId);
                if (!org) return undefined;
                const rate = { limit: org.requestsPerHour };
                return readGrantedPerHour(redis, `${config.redisPrefix}:budget:`, org.token, rate);
              };
            }
          }
          let status: SyncStatus;
          try {
            status = await collectSyncStatus({
              warehouse,
              orgIds: config.organizations.map((o) => o.orgId),
              config,
              streamNames: Object.fromEntries(config.organizations.map((o) => [o.orgId, o.stream.name])),
              reconcileStreamNames: Object.fromEntries(
                config.organizations
                  .filter((o) => o.stream.reconcile)
                  .map((o) => [o.orgId, reconcileStreamName(o.stream)]),
              ),
              ...(queue ? { queue } : {}),
              ...(slots ? { slots } : {}),
              ...(grantedPerHour ? { grantedPerHour } : {}),
            });
          } catch (error) {
            if (/does not exist/.test((error as Error).message)) {
              throw new UserFacingError('the warehouse has no validic-sync tables yet', {
                fix: 'run `validic-sync migrate` (or any sync command) first',
                cause: error,
              });
            }
            throw explainPermissionDenied(error, 'status');
          }
          if (queueError) status.queueError = queueError;
          if (options.json) print(JSON.stringify(status, null, 2));
          else for (const line of formatStatus(status, describeWarehouse(config))) print(line);
          // What status could read is printed; what it could not is an error, so a script or a probe
          // that runs it does not take a partial answer for a whole one.
          if (queueError)
            throw new UserFacingError(
              `status could not read the queue, failed jobs and stream slots: ${queueError}`,
              {
                fix: 'start Redis or correct REDIS_URL (the warehouse part above is complete); unset REDIS_URL to leave the queue out',
              },
            );
        } finally {
          for (const close of closers) await close();
        }
        return EXIT_OK;
      }),
    );
}

function ago(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** `status`'s tables: left-aligned columns with a header rule, through the one table formatter, uncut. */
const table = formatColumns;

/** A table set in two spaces under its heading. */
function indentedTable(header: string[], rows: string[][]): string[] {
  return table(header, rows).map((l) => `  ${l}`);
}

/** A heading and its table, or `none` under it when there is no row. */
function section(heading: string, none: string, header: string[], rows: string[][]): string[] {
  return ['', heading, ...(rows.length === 0 ? [`  ${none}`] : indentedTable(header, rows))];
}

function brief(value: unknown, max = 70): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function describeReconcile(value: unknown): string {
  if (!value || typeof value !== 'object') return 'never';
  const r = value as { events?: number; missed?: number; startDate?: string; endDate?: string };
  if (typeof r.events !== 'number') return brief(value);
  return `${r.missed ?? 0} missed of ${r.events} events (${r.startDate}..${r.endDate})`;
}

const period = (seconds: number | null) => formatPeriod(seconds === null ? null : seconds * 1000);

/** The budget plan: requests per hour by kind of work, and the recent poll's sweep periods. */
export function formatBudget(b: BudgetStatus): string[] {
  const r = b.recentPoll;
  const pct = (share: number) => `${Math.round(share * 1000) / 10} %`;
  const kinds: [string, keyof BudgetStatus['perHour']][] = [
    ['stream connects and replays', 'stream'],
    ['push and reconcile fetches', 'pushAndReconcile'],
    ['recent poll', 'recent'],
    ['completeness audit', 'audit'],
    ['backfill', 'backfill'],
  ];
  return [
    `request budget: ${b.requestsPerHour} per hour, ${Math.round(b.usablePerHour)} usable${b.grantedPerHour !== undefined && b.grantedPerHour < Math.round(b.usablePerHour) ? `, ${b.grantedPerHour} granted now (lowered after the platform answered 429)` : ''}${b.overcommitted ? ' (OVERCOMMITTED: reservations exceed what backfill leaves)' : ''}`,
    ...indentedTable(
      ['work', 'requests/h', 'share'],
      kinds.map(([label, k]) => [label, String(Math.round(b.perHour[k])), pct(b.shares[k])]),
    ),
    `  recent poll (${r.mode}): ${r.polling ? `ON, ${r.days} day${r.days === 1 ? '' : 's'} back` : 'off'}: ${r.reason}; stream last heard ${r.streamLastHeardSeconds === null ? 'never' : `${period(r.streamLastHeardSeconds)} ago`}`,
    ...(r.polling
      ? [
          `  recent poll: ${r.activeUsers} active + ${r.dormantUsers} dormant users × ${r.requestsPerUser} requests; needs ${Math.round(r.demandPerHour)}/h`,
          `  sweep of active users: every ${period(r.plannedSeconds)} (configured ${period(r.configuredSeconds)}); dormant every ${period(r.plannedDormantSeconds)} (configured ${period(r.configuredDormantSeconds)})`,
        ]
      : []),
    `  oldest poll of an active user: ${r.activeNeverPolled > 0 ? `${r.activeNeverPolled} never polled yet` : `${period(r.oldestActivePollSeconds)} ago`}`,
    ...(b.push && pushActive(b.push) ? formatPush(b.push) : []),
  ];
}

const pushActive = (p: NonNullable<BudgetStatus['push']>) =>
  p.pending + p.queued + p.failed + p.requestsLastHour + p.refusedLastHour > 0;

/** Push's share and its durable queue: the backlog, its age, failures and refusals. */
function formatPush(p: NonNullable<BudgetStatus['push']>): string[] {
  return [
    `  push fetches: at most ${Math.round(p.capPerHour)}/h, asking ${Math.round(p.demandPerHour)}/h, planned ${Math.round(p.plannedPerHour)}/h; ${p.requestsLastHour} requests and ${p.doneLastHour} fetches done in the last hour`,
    `  push backlog: ${p.pending} pending (${p.due} due, oldest ${p.oldestPendingSeconds === null ? '—' : `${period(p.oldestPendingSeconds)} ago`}), ${p.queued} queued, ${p.failed} failed`,
    ...(p.refusedLastHour > 0
      ? [
          `  push refused in the last hour: ${p.refusedLastHour} requests in ${p.refusedMinutesLastHour} minutes (read again by a legacy latest pass)`,
        ]
      : []),
  ];
}

/** The stream's open gaps and the reconciliation stream's passes (src/stream/README.md, "Gaps"). */
function formatGapsAndPasses(
  org: SyncStatus['orgs'][number],
  lagOf: (at: string | null) => string,
): string[] {
  const out: string[] = [];
  const gaps = org.stream.gaps;
  const r = org.reconciliation;
  out.push(
    gaps.open === 0
      ? '  gaps: none open (every span the stream may have lost events in is covered by a delivery)'
      : `  gaps: ${gaps.open} open, until a delivery covers them (events in them may be missing)`,
  );
  if (gaps.oldest.length > 0)
    out.push(
      ...table(
        ['from', 'to', 'reason', 'slot', 'left to', 'recorded'],
        gaps.oldest.map((g) => [
          g.from,
          g.to,
          g.reason,
          String(g.slot),
          g.handledBy,
          `${lagOf(g.recordedAt)} ago`,
        ]),
      ).map((l) => `    ${l}`),
    );
  const describe = (d: NonNullable<typeof r.lastPass>) =>
    `${d.outcome}, ${lagOf(d.startedAt)} ago (${d.trigger}); re-delivered ${d.frames}, missed by the stream ${d.missed} (inserted ${d.counts.inserted}, updated ${d.counts.updated})`;
  out.push(
    '',
    r.streamName
      ? `reconciliation stream ${r.streamName} (one of the platform's 5 streams per customer)`
      : "reconciliation stream: off (stream.reconcile is false): the provider's replay delivers the gaps",
  );
  if (r.streamName) out.push(r.lastPass ? `  last pass: ${describe(r.lastPass)}` : '  no pass yet');
  const d = r.lastDelivery;
  if (d && d.source === 'replay')
    out.push(`  last gap replay (from ${d.reachFrom.slice(0, 10)}): ${describe(d)}`);
  if (r.interrupted > 0)
    out.push(
      `  ${r.interrupted} ${r.interrupted === 1 ? 'delivery' : 'deliveries'} marked running whose process is gone: the next stream, reconcile or worker start marks ${r.interrupted === 1 ? 'it' : 'them'} interrupted and replays ${r.interrupted === 1 ? 'its' : 'their'} gap`,
    );
  out.push(
    `  missed by the stream (measured loss): last 24 h ${r.last24h.missed} of ${r.last24h.frames} re-delivered in ${r.last24h.passes} deliveries; last 7 days ${r.last7d.missed} of ${r.last7d.frames} in ${r.last7d.passes}`,
  );
  return out;
}

/** The first sync (src/budget/first-sync.ts): whether every user was covered from before the stream began. */
function formatFirstSync(f: FirstSyncStatus, lagOf: (at: string | null) => string): string {
  const days = f.from && f.to ? ` over ${f.from}..${f.to}` : '';
  if (f.state === 'complete')
    return `  first sync: complete ${lagOf(f.completedAt)} ago${f.users === null ? '' : `, ${f.users} users polled${days} since the stream was first heard`}`;
  if (f.state === 'running')
    return `  first sync: running since ${lagOf(f.startedAt)} ago${days}: ${f.reason} (records created before the stream began come only this way)`;
  return `  first sync: ${f.state}: ${f.reason}`;
}

/** `status`'s lines; `warehouse` says which one was read (host and database, or the embedded folder). */
export function formatStatus(status: SyncStatus, warehouse: string = status.warehouse): string[] {
  const out: string[] = [`status at ${status.at} of ${warehouse}`];
  const clock = status.platformClock;
  if (clock && Math.abs(clock.offsetSeconds) > 60) {
    const ahead = clock.offsetSeconds < 0 ? 'ahead of' : 'behind';
    out.push(
      `platform clock: the worker's clock (${clock.reporter}) is ${period(Math.abs(clock.offsetSeconds))} ${ahead} the platform's; syncing follows the platform's, fix the host's clock (NTP)`,
    );
  }
  if (status.orgs.length === 0) out.push('', 'no organization configured or synced yet');
  for (const org of status.orgs) {
    const lagOf = (at: string | null) =>
      at ? ago(Math.round((Date.parse(status.at) - Date.parse(at)) / 1000)) : '—';
    const cursorTable = (cursors: CursorStatus[]) =>
      indentedTable(
        ['cursor', 'updated', 'value'],
        cursors.map((c) => [c.key, `${lagOf(c.updatedAt)} ago`, brief(c.value, 60)]),
      );
    out.push('', `== ${org.orgId}`);
    out.push(
      ...table(
        ['what', 'value', 'as of'],
        [
          [
            'users',
            String(org.users.count),
            org.users.lastFullSync ? `full sync ${lagOf(org.users.lastFullSync)} ago` : 'never fully synced',
          ],
          [
            'records',
            org.records.countIsEstimate ? `about ${org.records.count}` : String(org.records.count),
            org.records.countIsEstimate
              ? "the planner's estimate (over 100,000: not counted one by one)"
              : '',
          ],
          ['lag (newest created_at)', ago(org.records.lagSeconds), org.records.newestCreatedAt ?? '—'],
          ['since last ingest', ago(org.records.sinceIngestSeconds), org.records.newestIngestedAt ?? '—'],
          [
            'reconcile last',
            describeReconcile(org.reconcile),
            (org.reconcile as { at?: string } | null)?.at
              ? `${lagOf((org.reconcile as { at: string }).at)} ago`
              : '',
          ],
        ],
      ),
    );
    out.push('', `stream ${org.stream.name ?? '(not configured)'}`);
    if (org.stream.slots) {
      // Slots are numbered from 0: "slot 0 held by …", never "slots held: 0", which reads as none.
      const held = Object.entries(org.stream.slots);
      out.push(
        held.length
          ? `  connections: ${held.length} (${held.map(([slot, owner]) => `slot ${slot} held by ${owner}`).join(', ')})`
          : '  connections: none (no worker holds a stream slot)',
      );
    }
    out.push(...(org.stream.cursors.length === 0 ? ['  no cursor yet'] : cursorTable(org.stream.cursors)));
    out.push(...formatGapsAndPasses(org, lagOf));
    if (org.firstSync) out.push(formatFirstSync(org.firstSync, lagOf));
    if (org.legacy.length > 0) out.push('', 'legacy cursors', ...cursorTable(org.legacy));
    if (org.otherCursors.length > 0) out.push('', 'other cursors', ...cursorTable(org.otherCursors));
    if (org.budget) out.push('', ...formatBudget(org.budget));
    out.push(...formatAuditStatus(org.audit, lagOf));
    out.push(
      ...section(
        'backfill runs (running, and failed or interrupted in the last 7 days)',
        'none',
        ['run', 'status', 'started', 'windows done', 'pending', 'records', 'args'],
        org.runs.map((r) => [
          r.id.slice(0, 8),
          r.status,
          `${lagOf(r.startedAt)} ago`,
          `${r.done}/${r.windows}`,
          String(r.pending),
          String(r.records),
          brief(r.args, 50),
        ]),
      ),
      ...section(
        'quarantine',
        'empty',
        ['kind', 'reason', 'items', 'seen'],
        org.quarantine.map((q) => [q.kind, brief(q.reason, 60), String(q.items), String(q.seen)]),
      ),
    );
  }
  if (status.queue) {
    const q = status.queue;
    out.push('', '== queue');
    out.push(...indentedTable(Object.keys(q.counts), [Object.values(q.counts).map(String)]));
    if (q.schedulers.length > 0)
      out.push(
        '',
        'schedules',
        ...indentedTable(
          ['id', 'every', 'next'],
          q.schedulers.map((s) => [
            s.id,
            s.every ? `${Math.round(s.every / 60_000)} min` : '—',
            s.next ? new Date(s.next).toISOString() : '—',
          ]),
        ),
      );
    out.push(
      ...section(
        'failed jobs (newest)',
        'none',
        ['job', 'id', 'attempts', 'reason'],
        q.failed.map((f) => [f.name, brief(f.id, 40), String(f.attemptsMade), brief(f.failedReason, 70)]),
      ),
    );
  } else if (status.queueError) {
    out.push('', `queue: unavailable (${status.queueError})`);
  } else {
    out.push('', 'queue: REDIS_URL not set (jobs run inline in one-shot commands)');
  }
  return out;
}
