/**
 * The README's sizing table, computed by the budget planner (pure): what each kind of REST work costs and
 * how long it takes at 2,000 requests per hour, from 1,000 to 1,000,000 users, with the defaults (7
 * resources, one stream connection and the reconciliation stream, users.sync hourly, connections.recent
 * daily, backfill's minimum 10 %). Every user counts as active: the worst case for the polls.
 * Columns: the hourly reservations; what stream-first planning leaves to backfill while the stream is
 * healthy; how many new users a day that backfills a year of history for; one year of history for every
 * user on it; and one sweep of the recent poll over every user: what a fallback poll takes while the stream
 * is down (a one-day outage costs one window per resource, as the default 3-day lookback does), and the
 * period of the blind poll (`sync.recentPoll` 'always') stream-first planning replaces.
 * `node scripts/sizing-table.ts --write` puts it between the README's markers; a unit test checks it.
 */
import { configSchema } from '../config/schema.ts';
import { formatUtcDate, planRecordWindows } from '../validic/date-windows.ts';
import { DEFAULT_REQUESTS_PER_HOUR } from '../validic/platform-limits.ts';
import { budgetPlanInput } from './budget-plan-input.ts';
import { formatPeriod } from './format-period.ts';
import { HOUR_MS, planRequestBudget } from './plan-request-budget.ts';

export const SIZING_POPULATIONS = [1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000];

/** Requests of one user's year of history: one per resource and ≤ 30-day window (edges included). */
function yearRequestsPerUser(resources: number): number {
  const today = Date.UTC(2026, 0, 1) / 86_400_000;
  return resources * planRecordWindows(formatUtcDate(today - 365), formatUtcDate(today)).length;
}

export function sizingTable(requestsPerHour = DEFAULT_REQUESTS_PER_HOUR): string[] {
  const config = configSchema.parse({ organizations: [{ orgId: 'o', token: 't', requestsPerHour }] });
  const org = config.organizations[0]!;
  const resources = org.resources.length;
  const rows = SIZING_POPULATIONS.map((users) => {
    const counts = { activeUsers: users, dormantUsers: 0, pushFetchesLastHour: 0 };
    const plan = (recentPoll?: { polling: boolean; days: number }) =>
      planRequestBudget(budgetPlanInput(config, org, counts, recentPoll));
    const healthy = plan({ polling: false, days: 0 });
    const reserved = healthy.perHour.stream + healthy.perHour.pushAndReconcile;
    const backfill = healthy.perHour.backfill;
    const year = backfill > 0 ? ((users * yearRequestsPerUser(resources)) / backfill) * HOUR_MS : null;
    const newUsersPerDay = (backfill * 24) / yearRequestsPerUser(resources);
    const sweep = plan({ polling: true, days: 1 });
    return [
      users.toLocaleString('en-US'),
      `${Math.round(reserved)}${healthy.overcommitted ? ' (over)' : ''}`,
      String(Math.round(backfill)),
      Math.floor(newUsersPerDay).toLocaleString('en-US'),
      formatPeriod(year),
      formatPeriod(sweep.recent.activePeriodMs),
      // One cell per user per rotation step: the audit reaches every user once in users ÷ cells per hour.
      healthy.perHour.audit > 0 ? formatPeriod((users / healthy.perHour.audit) * HOUR_MS) : 'never',
    ];
  });
  const header = [
    'users',
    'reserved/h (streams, reconcile)',
    'left to backfill/h (stream healthy)',
    'new users a day, a year of history each',
    'a year of history for every user',
    'one recent-poll sweep of every user (stream down, or `always`)',
    'the completeness audit reaches every user (one cell each)',
  ];
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i <= 3 ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}
