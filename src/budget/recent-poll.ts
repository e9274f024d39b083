/**
 * The recent REST poll: whether it runs now and over which days (stream-first: only while the stream
 * is unheard), and the date windows of one user's poll.
 */
import type { Config, OrganizationConfig } from '../config/schema.ts';
import {
  type DateWindow,
  formatUtcDate,
  planRecordWindows,
  recordTypeOf,
  toV2Resource,
} from '../validic/platform-limits.ts';

/**
 * Whether the recent REST poll runs now, and over which days (pure).
 *
 * Stream-first: the org's stream delivers every record the recent poll would re-read, at one request per
 * connect, and its reconciliation stream re-delivers what it lost. So with `sync.recentPoll` 'fallback'
 * (the default) the poll is off while the primary stream is heard from, and comes on only once it has
 * been unheard for `budget.streamFallbackMinutes`: then it re-reads the days the outage covers (from the
 * day the stream was last heard, at most the lookback), for every pollable user, active first. A stream
 * that was never heard (streams not run by any process, or not yet) counts as down. 'always' keeps the
 * blind poll of the whole lookback (the behaviour before streams carried freshness).
 *
 * "Heard from" is the newest `lastLiveAt` among the primary's connection cursors: a live connection
 * writes it with every commit, and at least once a minute while only pokes arrive (the cursor
 * heartbeat), so it is fresh whenever any connection is live, in whichever process of the fleet.
 *
 * Before any of that, the first sync (src/budget/first-sync.ts): from the moment the stream is first
 * heard until every user has been polled over the lookback once since, the poll runs whatever the mode,
 * because what was created before the stream's backlog began reaches the warehouse only by REST.
 */
const DAY_MS = 86_400_000;

export interface RecentPollMode {
  /** 'off': not scheduled. 'always': the blind poll. 'fallback': only while the streams are down. */
  mode: 'off' | 'always' | 'fallback';
  /** Whether the tick queues polls now. */
  polling: boolean;
  /** Days of the lookback polled now (the outage's days in fallback; 0 when not polling). */
  days: number;
  /** Why, for `status` and the logs. */
  reason: string;
  /** When the primary stream was last heard from (ISO), if ever. */
  streamLastHeardAt: string | null;
  /** The poll is the first sync's: every user over the lookback once, since the stream was first heard. */
  firstSync: boolean;
}

/** REST resources the stream's resource filter leaves out (the poll stays on for them). */
function resourcesTheStreamLeavesOut(org: OrganizationConfig): string[] {
  const filter = org.stream.resources;
  if (!filter) return [];
  // The filter names record types (measurement), the REST resources are paths (measurements).
  const streamed = new Set<string>(filter);
  return org.resources.filter((r) => !streamed.has(recordTypeOf(toV2Resource(r))));
}

export function recentPollMode(
  config: Config,
  org: OrganizationConfig,
  streamLastHeardMs: number | undefined,
  now: number,
  /** Whether the first sync of the org's primary stream is complete (src/budget/first-sync.ts). */
  firstSyncComplete: boolean,
): RecentPollMode {
  const lastHeard = streamLastHeardMs === undefined ? null : new Date(streamLastHeardMs).toISOString();
  const lookback = config.sync.lookbackDays;
  if (!config.schedules.enabled || config.schedules.recentPollMinutes <= 0)
    return {
      mode: 'off',
      polling: false,
      days: 0,
      reason: 'schedules.recentPollMinutes is 0',
      streamLastHeardAt: lastHeard,
      firstSync: false,
    };
  if (streamLastHeardMs !== undefined && !firstSyncComplete)
    return {
      mode: config.sync.recentPoll,
      polling: true,
      days: lookback,
      reason:
        'the first sync: every user is polled over the lookback once since the stream was first heard (what was created before the stream began comes only this way)',
      streamLastHeardAt: lastHeard,
      firstSync: true,
    };
  const always = (reason: string): RecentPollMode => ({
    mode: 'always',
    polling: true,
    days: lookback,
    reason,
    streamLastHeardAt: lastHeard,
    firstSync: false,
  });
  if (config.sync.recentPoll === 'always') return always('sync.recentPoll is always');
  const leftOut = resourcesTheStreamLeavesOut(org);
  if (leftOut.length > 0) return always(`the stream's resource filter leaves out ${leftOut.join(', ')}`);

  const fallbackMs = config.budget.streamFallbackMinutes * 60_000;
  if (streamLastHeardMs !== undefined && now - streamLastHeardMs <= fallbackMs)
    return {
      mode: 'fallback',
      polling: false,
      days: 0,
      reason: 'the stream carries freshness (heard from within budget.streamFallbackMinutes)',
      streamLastHeardAt: lastHeard,
      firstSync: false,
    };
  // The outage's days: from the UTC day the stream was last heard to today, at most the lookback.
  const outageDays =
    streamLastHeardMs === undefined
      ? lookback
      : Math.min(lookback, Math.floor(now / DAY_MS) - Math.floor(streamLastHeardMs / DAY_MS));
  return {
    mode: 'fallback',
    polling: true,
    days: outageDays,
    reason:
      streamLastHeardMs === undefined
        ? 'no stream has been heard from: polling the lookback'
        : `the stream has been unheard for more than ${config.budget.streamFallbackMinutes} min: polling the outage's days`,
    streamLastHeardAt: lastHeard,
    firstSync: false,
  };
}

/**
 * The date windows one user's recent poll fetches (pure): the last `lookbackDays` days plus today (and a
 * day more at each edge), in windows of ≤ 30 days. The records.recent tick queues one records.poll per window, and the budget
 * planner counts requests per user from the same windows, so the plan and the polls cannot disagree.
 */
export function recentPollWindows(lookbackDays: number, nowMs: number): DateWindow[] {
  const today = Math.floor(nowMs / 86_400_000);
  // One day more at each edge: the platform may window by the user's local date (platform-limits.ts).
  return planRecordWindows(formatUtcDate(today - lookbackDays), formatUtcDate(today));
}
