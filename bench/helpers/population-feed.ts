/**
 * The population's day as it happens: a seeded sequence of events (new records, late syncs, changes,
 * deletions, connection events, legacy records with their push notification, new users) released at
 * the rate a population of `users` produces them, times the acceleration `accelerate`.
 *
 * It drives the sandbox through its public control API only (addRecord, updateRecord, …), so what it
 * does is logged for streams and replay and lands in the truth exactly as any other change. Every
 * pick is O(1): the sandbox's own live feed copies every user and record id per event, which is fine
 * for tests and far too slow at 100,000 users.
 */
import type { Sandbox } from '../../src/sandbox/index.ts';
import { createPrng, type Prng } from '../../src/sandbox/prng.ts';
import { DAY_MS, utcDay } from '../../src/sandbox/time.ts';
import { LEGACY_OBJECTS, RESOURCE_TYPES, type ResourceType } from '../../src/sandbox/types.ts';

/** What one user does per (simulated) day, on average. */
export interface PopulationRates {
  /** New v2 records (the sandbox's default mix sums to 8: a few to a few dozen per user). */
  records: number;
  /** Share of new records that belong to an earlier day (a late sync: the device synced a day late). */
  lateShare: number;
  /** Records changed later (a re-sync with other content). */
  updates: number;
  deletes: number;
  /** A source disconnected and connected again (two connection events). */
  reconnects: number;
  /** Legacy records written (each announced by a push notification). */
  pushes: number;
  /** New users joining, as a share of the population per day. */
  newUserShare: number;
}

export const DEFAULT_RATES: PopulationRates = {
  records: 8,
  lateShare: 0.1,
  updates: 0.24,
  deletes: 0.16,
  reconnects: 0.02,
  pushes: 0.1,
  newUserShare: 0.005,
};

/** The sandbox's default mix, as weights of the record types. */
const TYPE_WEIGHTS: [ResourceType, number][] = [
  ['measurement', 1],
  ['nutrition', 2.5],
  ['intraday', 1],
  ['summary', 1],
  ['workout', 0.5],
  ['sleep', 1],
  ['cgm', 1],
];

const TICK_MS = 100;

export interface FeedCounts {
  records: number;
  late: number;
  updates: number;
  deletes: number;
  connectionEvents: number;
  pushes: number;
  newUsers: number;
  /** Events the sandbox refused (e.g. no record of that day can have happened yet). */
  refused: number;
}

export class PopulationFeed {
  private readonly sandbox: Sandbox;
  private readonly prng: Prng;
  private readonly rates: PopulationRates;
  private readonly uids: string[];
  private readonly legacyUserIds: string[];
  /** Live (not deleted) record ids: the candidates for changes and deletions (swap-remove on delete). */
  private readonly liveIds: string[];
  private timer: NodeJS.Timeout | null = null;
  readonly counts: FeedCounts = {
    records: 0,
    late: 0,
    updates: 0,
    deletes: 0,
    connectionEvents: 0,
    pushes: 0,
    newUsers: 0,
    refused: 0,
  };
  /** New users added during the run (whatever backfill they need is theirs). */
  readonly addedUids: string[] = [];
  /** Legacy records written during the run: the push path's truth. */
  readonly pushed: { object: string; id: string }[] = [];
  private readonly weights: { kind: string; weight: number }[];
  private readonly totalWeight: number;

  constructor(sandbox: Sandbox, options: { seed: number; rates?: Partial<PopulationRates> }) {
    this.sandbox = sandbox;
    this.prng = createPrng(options.seed ^ 0x9091);
    this.rates = { ...DEFAULT_RATES, ...options.rates };
    this.uids = sandbox.truth.users().map((u) => u.uid);
    this.legacyUserIds = sandbox.truth.legacyUsers().map((u) => u._id);
    this.liveIds = sandbox.truth
      .records()
      .filter((r) => !r.deleted_at)
      .map((r) => r.id);
    const r = this.rates;
    // Per user per day; new users are a share of the population, so per user that share.
    this.weights = [
      { kind: 'records', weight: r.records * (1 - r.lateShare) },
      { kind: 'late', weight: r.records * r.lateShare },
      { kind: 'updates', weight: r.updates },
      { kind: 'deletes', weight: r.deletes },
      { kind: 'connectionEvents', weight: r.reconnects },
      { kind: 'pushes', weight: r.pushes },
      { kind: 'newUsers', weight: r.newUserShare },
    ];
    this.totalWeight = this.weights.reduce((s, w) => s + w.weight, 0);
  }

  /** Events per real second: users × events per user per day ÷ 86,400 × acceleration. */
  eventsPerSecond(accelerate: number): number {
    return (this.uids.length * this.totalWeight * accelerate) / 86_400;
  }

  start(accelerate: number): void {
    this.stop();
    // The population at the start sets the rate; users who join add little within a day.
    const perSecond = this.eventsPerSecond(accelerate);
    let owed = 0;
    this.timer = setInterval(() => {
      owed += (perSecond * TICK_MS) / 1000;
      for (; owed >= 1; owed--) this.step();
    }, TICK_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private pickKind(): string {
    let roll = this.prng.next() * this.totalWeight;
    for (const w of this.weights) {
      roll -= w.weight;
      if (roll < 0) return w.kind;
    }
    return 'records';
  }

  private pickType(): ResourceType {
    let roll = this.prng.next() * 8;
    for (const [type, weight] of TYPE_WEIGHTS) {
      roll -= weight;
      if (roll < 0) return type;
    }
    return RESOURCE_TYPES[0];
  }

  /** One event of the seeded sequence. */
  step(): void {
    const control = this.sandbox.control;
    const kind = this.pickKind();
    try {
      switch (kind) {
        case 'records':
        case 'late': {
          const uid = this.prng.pick(this.uids);
          const type = this.pickType();
          const day =
            kind === 'late' ? utcDay(Date.parse(control.now()) - this.prng.int(1, 2) * DAY_MS) : undefined;
          const record = control.addRecord(day ? { uid, type, day } : { uid, type });
          this.liveIds.push(record.id);
          this.counts.records++;
          if (kind === 'late') this.counts.late++;
          break;
        }
        case 'updates': {
          if (this.liveIds.length === 0) return;
          control.updateRecord(this.prng.pick(this.liveIds));
          this.counts.updates++;
          break;
        }
        case 'deletes': {
          if (this.liveIds.length === 0) return;
          const index = Math.floor(this.prng.next() * this.liveIds.length);
          const id = this.liveIds[index]!;
          this.liveIds[index] = this.liveIds.at(-1)!;
          this.liveIds.pop();
          control.deleteRecord(id);
          this.counts.deletes++;
          break;
        }
        case 'connectionEvents': {
          const uid = this.prng.pick(this.uids);
          // A disconnect and a reconnect of the same source (the user re-authorizes).
          const source = this.prng.pick(['fitbit', 'garmin', 'withings']);
          control.connectSource(uid, source);
          control.disconnectSource(uid, source);
          control.connectSource(uid, source);
          this.counts.connectionEvents += 3;
          break;
        }
        case 'pushes': {
          const userId = this.prng.pick(this.legacyUserIds);
          const object = this.prng.pick(LEGACY_OBJECTS);
          const record = control.addLegacyRecord({ object, user_id: userId });
          this.pushed.push({ object, id: record._id });
          this.counts.pushes++;
          break;
        }
        case 'newUsers': {
          const user = control.addUser();
          this.uids.push(user.uid);
          this.addedUids.push(user.uid);
          this.counts.newUsers++;
          break;
        }
      }
    } catch {
      // e.g. no record of that type can have happened yet today in the user's zone: skipped, counted.
      this.counts.refused++;
    }
  }
}
