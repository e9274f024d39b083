/**
 * The worker's recurring work, as BullMQ job schedulers (`upsertJobScheduler`): every process of the
 * fleet upserts the same schedulers at start, Redis holds one of each, and each tick produces ONE job
 * whichever process picks it up.
 *
 * The worker's recurring work, as BullMQ job schedulers (`upsertJobScheduler`): every process of the
 * fleet upserts the same schedulers at start, Redis holds one of each, and each tick produces ONE job
 * whichever process picks it up. A scheduler's job template is fixed, so rolling ranges are computed
 * when the job runs (records.recent, connections.recent, legacy.sync from its cursors).
 *
 * | scheduler                          | job                  | every (config `schedules`)          |
 * | ---------------------------------- | -------------------- | ----------------------------------- |
 * | `users.sync\|<org>`                | users.sync           | `usersSyncMinutes` (60)             |
 * | `records.recent\|<org>`            | records.recent       | `budget.tickSeconds` (60 s)         |
 * | `connections.recent\|<org>`        | connections.recent   | `reconcileMinutes` (1 day)          |
 * | `legacy.sync\|<org>` (legacy on)   | legacy.sync          | `legacyLatestMinutes` (15)          |
 * | `push.drain\|<org>` (push on)      | push.drain           | `budget.tickSeconds` (60 s)         |
 * | `push.prune`                       | push.prune           | `push.pruneMinutes` (1 day)         |
 * | `warehouse.maintain`               | warehouse.maintain   | `warehouse.maintainMinutes` (1 day) |
 *
 * Streams are not scheduled: the worker keeps them running itself (stream-supervisor.ts).
 * records.recent is a frequent tick, not an hourly sweep: each tick enqueues the next slice of users
 * that the budget plan allows (records-recent.ts); `recentPollMinutes` (0 = off) is the period it aims at,
 * and by default it polls only while the org's stream is down (src/budget/recent-poll.ts).
 */
import type { Queue } from 'bullmq';
import type { Config } from '../config/schema.ts';
import { pushConfigured } from '../push/push-admission.ts';
import type { JobDefinition } from '../queue/job-definition.ts';
import { jobKey } from '../queue/job-definition.ts';
import { jobOptions, type KeepJobs, toBullJobId } from '../queue/job-queue.ts';

export interface PlannedSchedule {
  /** Scheduler id: `<job>|<org>`. */
  id: string;
  everyMs: number;
  name: string;
  payload: unknown;
}

/** Which schedulers the config asks for (pure). Jobs missing from the catalog are left out. */
export function planSchedules(config: Config, catalog: Record<string, JobDefinition>): PlannedSchedule[] {
  const s = config.schedules;
  if (!s.enabled) return [];
  const out: PlannedSchedule[] = [];
  const add = (
    name: string,
    orgId: string,
    minutes: number,
    payload: unknown,
    everyMs = minutes * 60_000,
  ) => {
    const definition = catalog[name];
    if (!definition || minutes <= 0) return;
    out.push({
      id: toBullJobId(jobKey(name, orgId)),
      everyMs: Math.max(1, Math.round(everyMs)),
      name,
      payload: definition.payload.parse(payload),
    });
  };
  for (const org of config.organizations) {
    add('users.sync', org.orgId, s.usersSyncMinutes, { orgId: org.orgId });
    add(
      'records.recent',
      org.orgId,
      s.recentPollMinutes,
      { orgId: org.orgId },
      config.budget.tickSeconds * 1000,
    );
    add('connections.recent', org.orgId, s.reconcileMinutes, { orgId: org.orgId, days: s.reconcileDays });
    if (org.stream.reconcile)
      add('streams.reconcile', org.orgId, s.reconcileStreamMinutes, {
        orgId: org.orgId,
        trigger: 'schedule',
      });
    if (org.legacy.enabled) add('legacy.sync', org.orgId, s.legacyLatestMinutes, { orgId: org.orgId });
    // The completeness audit's tick spends the plan's audit share (budget.auditShare; 0 = none).
    if (config.budget.auditShare > 0) add('records.audit', org.orgId, s.auditMinutes, { orgId: org.orgId });
    // Pushes kick their drain themselves; the tick drains what push's share left waiting.
    if (pushConfigured(config))
      add('push.drain', org.orgId, 1, { orgId: org.orgId }, config.budget.tickSeconds * 1000);
  }
  // Not per org: one table (or schema) for the whole process.
  const fleetWide: [name: string, minutes: number][] = [
    ['push.prune', config.push.pruneMinutes],
    ['warehouse.maintain', config.warehouse.maintainMinutes],
  ];
  for (const [name, minutes] of fleetWide) {
    const definition = catalog[name];
    if (!definition || minutes <= 0) continue;
    out.push({ id: jobKey(name), everyMs: minutes * 60_000, name, payload: definition.payload.parse({}) });
  }
  return out;
}

/**
 * Upserts the planned schedulers and removes the ones the config no longer asks for (so turning a
 * schedule off takes effect fleet-wide). Returns the ids upserted.
 */
export async function applySchedules(
  queue: Queue,
  planned: PlannedSchedule[],
  catalog: Record<string, JobDefinition>,
  keep: KeepJobs,
): Promise<string[]> {
  const wanted = new Set(planned.map((p) => p.id));
  for (const existing of await queue.getJobSchedulers(0, -1)) {
    if (existing.key && !wanted.has(existing.key)) await queue.removeJobScheduler(existing.key);
  }
  for (const p of planned) {
    const definition = catalog[p.name]!;
    // The template carries no jobId: each tick gets the scheduler's own id.
    const { jobId: _unused, ...opts } = jobOptions(definition, p.payload, keep);
    await queue.upsertJobScheduler(
      p.id,
      { every: p.everyMs },
      { name: p.name, data: p.payload, opts: { ...opts, removeOnComplete: { count: 100 } } },
    );
  }
  return [...wanted];
}
