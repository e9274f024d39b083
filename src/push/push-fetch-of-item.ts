/**
 * What fetch a push item asks for, as a row of the durable queue (validic_sync.push_fetches), and how
 * rows with the same key merge (pure). Why and how: README.md, "`push-fetch-of-item.ts`".
 */
import type { LegacyObject } from '../validic/legacy-objects.ts';
import type { PushFetchInput } from '../warehouse/push-store.ts';
import type { PushItem } from './push-items.ts';

export interface PushFetchTiming {
  /** Arrival time of the notification. */
  now: number;
  /** `push.coalesceSeconds` in ms: items of one window of this length are due together, at its end. */
  coalesceMs: number;
  /** Half-width of the latest window around an announced `last_updated` (the legacy overlap, ≥ 1 minute). */
  updatedMarginMs: number;
}

const MINUTE_MS = 60_000;

/** End of the coalescing window `now` falls in (now itself without a window). */
export function coalescedDueAt(now: number, coalesceMs: number): number {
  return coalesceMs > 0 ? (Math.floor(now / coalesceMs) + 1) * coalesceMs : now;
}

const iso = (ms: number) => new Date(ms).toISOString();
const hourOf = (ms: number) => iso(ms).slice(0, 13);

export function pushFetchOfItem(item: PushItem, orgId: string, timing: PushFetchTiming): PushFetchInput {
  const base = {
    orgId,
    object: item.object,
    userId: item.userId ?? '',
    recordId: '',
    bucket: '',
    sources: null,
    items: 1,
    dueAt: iso(coalescedDueAt(timing.now, timing.coalesceMs)),
  };
  if (item.activityDate) {
    return {
      ...base,
      mode: 'activity',
      rangeStart: item.activityDate,
      rangeEnd: item.activityDate,
      sources: item.source ? [item.source] : null,
    };
  }
  if (item.recordId && item.userId) {
    return { ...base, mode: 'record', recordId: item.recordId, rangeStart: null, rangeEnd: null };
  }
  if (item.lastUpdated) {
    const at = Date.parse(item.lastUpdated);
    return {
      ...base,
      mode: 'updated',
      bucket: hourOf(at),
      rangeStart: iso(at - timing.updatedMarginMs),
      rangeEnd: iso(at + timing.updatedMarginMs),
    };
  }
  return { ...base, mode: 'updated', rangeStart: null, rangeEnd: null };
}

/**
 * The fetches that cover a minute whose notifications were refused: one org-level latest window per
 * object, from `lagMs` before the minute (records are updated before they are announced) to its end,
 * due once the minute is over.
 */
export function refusedMinuteFetches(input: {
  orgId: string;
  objects: readonly LegacyObject[];
  minuteStart: number;
  lagMs: number;
  coalesceMs: number;
}): PushFetchInput[] {
  const end = input.minuteStart + MINUTE_MS;
  return input.objects.map((object) => ({
    orgId: input.orgId,
    object,
    mode: 'refused',
    userId: '',
    recordId: '',
    bucket: hourOf(input.minuteStart),
    rangeStart: iso(input.minuteStart - input.lagMs),
    rangeEnd: iso(end),
    sources: null,
    items: 1,
    dueAt: iso(end + input.coalesceMs),
  }));
}
