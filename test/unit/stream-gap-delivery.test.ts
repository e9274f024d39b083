/**
 * Who delivers a gap again (src/stream/gap-delivery.ts), what a delivery counts as missed
 * (judge-missed.ts) and which delivery rows belong to dead processes (interrupted-deliveries.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  gapFiller,
  planGapReplay,
  replayEarliestDate,
  splitAtReplayReach,
} from '../../src/stream/gap-delivery.ts';
import { deliveryDead } from '../../src/stream/interrupted-deliveries.ts';
import { MissedJudge, ORDER_SLACK_MS, type PrimaryView, primaryView } from '../../src/stream/judge-missed.ts';
import type { DataFrame } from '../../src/stream/types.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import type { ReconcilePassRow } from '../../src/warehouse/stream-bookkeeping.ts';

const NOW = Date.parse('2026-11-28T12:00:00.000Z');
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('gap delivery', () => {
  it('the replay reaches 29 days back, never before 2025-07-01', () => {
    expect(replayEarliestDate(NOW)).toBe('2026-10-30');
    expect(replayEarliestDate(Date.parse('2025-07-10T00:00:00Z'))).toBe('2025-07-01');
  });

  it('splits a gap at the replay reach; a gap ending there is beyond it whole', () => {
    const earliest = '2026-10-30T00:00:00.000Z';
    expect(splitAtReplayReach({ from: iso(NOW - DAY), to: iso(NOW) }, NOW)).toEqual({
      withinReplay: { from: iso(NOW - DAY), to: iso(NOW) },
    });
    expect(splitAtReplayReach({ from: iso(NOW - 40 * DAY), to: earliest }, NOW)).toEqual({
      beyondReplay: { from: iso(NOW - 40 * DAY), to: earliest },
    });
    expect(splitAtReplayReach({ from: iso(NOW - 40 * DAY), to: iso(NOW) }, NOW)).toEqual({
      beyondReplay: { from: iso(NOW - 40 * DAY), to: earliest },
      withinReplay: { from: earliest, to: iso(NOW) },
    });
  });

  it('leaves a gap to the pass only when the pass re-delivers from at or before its start, exactly', () => {
    const coverFrom = NOW - 60_000;
    expect(gapFiller({ from: iso(coverFrom), to: iso(NOW) }, coverFrom)).toBe('reconcile');
    expect(gapFiller({ from: iso(coverFrom - 1), to: iso(NOW) }, coverFrom)).toBe('replay');
    expect(gapFiller({ from: iso(NOW), to: iso(NOW) }, undefined)).toBe('replay');
  });

  it('one replay for several gaps: from the earliest date, caught up at the latest end', () => {
    expect(
      planGapReplay(
        [
          { from: '2026-11-27T23:00:00.000Z', to: '2026-11-28T01:00:00.000Z' },
          { from: '2026-11-28T10:00:00.000Z', to: '2026-11-28T11:00:00.000Z' },
        ],
        NOW,
      ),
    ).toEqual({ date: '2026-11-27', targetMs: Date.parse('2026-11-28T11:00:00.000Z') });
    expect(planGapReplay([{ from: iso(NOW - 60 * DAY), to: iso(NOW) }], NOW).date).toBe('2026-10-30');
  });
});

describe('the primary as a delivery sees it', () => {
  it('floor: the least of what live connections committed through; a disconnected or silent one is not live', () => {
    const heard = iso(NOW - 1_000);
    const view = primaryView(
      [
        { slot: 0, lastLiveAt: heard, newestCreatedAt: iso(NOW - 5_000), quietAt: iso(NOW - 3_000) },
        { slot: 1, lastLiveAt: heard, newestCreatedAt: iso(NOW - 4_000) },
        { slot: 2, lastLiveAt: heard, lastDisconnectAt: heard, newestCreatedAt: iso(NOW - 90_000) },
      ],
      NOW,
      75_000,
    );
    expect(view).toEqual({ live: true, floorMs: NOW - 4_000, lastHeardMs: NOW - 1_000 });
    expect(primaryView([{ slot: 0, lastLiveAt: iso(NOW - 100_000) }], NOW, 75_000)).toEqual({
      live: false,
      floorMs: undefined,
      lastHeardMs: NOW - 100_000,
    });
  });
});

const frame = (id: string, createdMs: number): DataFrame => ({
  kind: 'data',
  payload: { id, checksum: 'c' },
  createdAt: iso(createdMs),
  receivedAt: 0,
  bytes: 1,
});

function judgeWith(views: PrimaryView[], holds: Set<string>) {
  const clock = createManualClock(NOW);
  const loaded: string[] = [];
  let reads = 0;
  const judge = new MissedJudge({
    clock,
    maxWaitMs: 5_000,
    primary: async () => views[Math.min(reads++, views.length - 1)]!,
    absent: async (keys) => new Set(keys.filter((k) => !holds.has(k))),
    load: async (frames) => {
      for (const f of frames) {
        const id = (f.kind === 'data' ? (f.payload as { id: string }).id : '') as string;
        loaded.push(id);
        holds.add(`${id}\u0001c`);
      }
    },
  });
  return { judge, loaded };
}

describe('MissedJudge', () => {
  it('counts an absent version below the live floor at once; holds one above it until the floor passes', async () => {
    const live = (floorMs: number): PrimaryView => ({ live: true, floorMs, lastHeardMs: NOW });
    // The primary commits 'fresh' meanwhile: the floor passes it and it is present then.
    const holds = new Set<string>();
    const { judge, loaded } = judgeWith([live(NOW - 10_000), live(NOW + ORDER_SLACK_MS)], holds);
    await judge.take([frame('lost', NOW - 20_000), frame('fresh', NOW - 1_000)]);
    expect(loaded).toEqual(['lost']);
    expect(judge.missed).toBe(1);
    holds.add('fresh\u0001c');
    await judge.finish();
    expect(judge.missed).toBe(1);
    expect(loaded).toEqual(['lost', 'fresh']);
  });

  it('past the wait, what the live primary still lacks is lost; with the primary down, only what it was sent', async () => {
    const stuck = judgeWith([{ live: true, floorMs: NOW - 10_000, lastHeardMs: NOW }], new Set());
    await stuck.judge.take([frame('gone', NOW - 1_000)]);
    await stuck.judge.finish();
    expect(stuck.judge.missed).toBe(1);

    const down = judgeWith([{ live: false, floorMs: undefined, lastHeardMs: NOW - 60_000 }], new Set());
    await down.judge.take([frame('sent-before', NOW - 120_000), frame('kept-by-platform', NOW - 1_000)]);
    expect(down.judge.missed).toBe(1);
    expect(down.loaded).toEqual(['sent-before', 'kept-by-platform']);
  });
});

describe('dead deliveries', () => {
  const row = (over: Partial<ReconcilePassRow & { heartbeatAgeMs: number }>) =>
    ({ host: 'here', pid: 123, heartbeatAgeMs: 1_000, ...over }) as ReconcilePassRow & {
      heartbeatAgeMs: number;
    };
  it('dead when its process is gone from this host, or silent for 2 minutes', () => {
    expect(deliveryDead(row({}), 'here', () => false)).toBe(true);
    expect(deliveryDead(row({}), 'here', () => true)).toBe(false);
    expect(deliveryDead(row({ host: 'elsewhere' }), 'here', () => false)).toBe(false);
    expect(deliveryDead(row({ host: 'elsewhere', heartbeatAgeMs: 121_000 }), 'here', () => true)).toBe(true);
    expect(deliveryDead(row({ pid: process.pid }), 'here', () => false)).toBe(false);
  });
});
