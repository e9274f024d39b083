/**
 * Builds one v2 record of any resource type from the seeded PRNG. The checksum is filled in by the
 * store (it is derived from the content), so a record built here carries an empty one.
 */
import { createHash } from 'node:crypto';
import type { Prng } from './prng.ts';
import { isoMillis, isoSeconds } from './time.ts';
import type { Metric, ResourceType, SeriesMetric, User, V2Record } from './types.ts';

export interface RecordContext {
  prng: Prng;
  orgId: string;
  user: User;
  /** Offset of the user's time zone in seconds. */
  utcOffset: number;
  type: ResourceType;
  /** UTC midnight of the calendar day the record belongs to (local day of the user). */
  dayMs: number;
  sourceType: string;
  device: { name: string; type: string } | null;
  createdAtMs: number;
  intradayIntervalMinutes: number;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

const metric = (type: string, unit: string, value: number, origin: Metric['origin'] = 'device'): Metric => ({
  type,
  origin,
  unit,
  value,
});

const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

/** Content hash of a record without its checksum and processing time: changes whenever data does. */
export function computeChecksum(record: V2Record): string {
  const { checksum: _c, created_at: _t, ...content } = record;
  return createHash('md5').update(JSON.stringify(content)).digest('hex');
}

export function buildRecord(ctx: RecordContext): V2Record {
  const { prng } = ctx;
  const localMidnight = ctx.dayMs - ctx.utcOffset * 1000;
  let start = localMidnight + prng.int(6, 21) * HOUR + prng.int(0, 59) * MINUTE;
  let end = start;
  let metrics: (Metric | SeriesMetric)[] = [];
  const extra: Record<string, unknown> = {};
  let tags: V2Record['tags'] = [];
  switch (ctx.type) {
    case 'measurement': {
      if (ctx.sourceType === 'omron' || ctx.sourceType === 'cellular_bp' || prng.chance(0.3)) {
        metrics = [
          metric('systolic', 'mmHg', prng.int(105, 150)),
          metric('diastolic', 'mmHg', prng.int(65, 95)),
          metric('pulse', 'bpm', prng.int(55, 95)),
        ];
      } else {
        const weight = round(55 + prng.next() * 50);
        metrics = [metric('body_weight', 'kg', weight), metric('bmi', 'kg/m2', round(weight / 3.1))];
      }
      if (prng.chance(0.1)) metrics = metrics.map((m) => ({ ...m, origin: 'manual' }));
      break;
    }
    case 'nutrition': {
      const meal = prng.pick(['Breakfast', 'Lunch', 'Dinner', 'Snack']);
      const energy = prng.int(150, 900);
      const foods = Array.from({ length: prng.int(1, 3) }, () => {
        const kcal = prng.int(50, 400);
        return {
          name: prng.pick(['Oatmeal', 'Apple', 'Chicken salad', 'Rice', 'Yogurt', 'Coffee', 'Bread']),
          brand: prng.chance(0.5) ? prng.pick(['Acme Foods', 'Green Farm', 'Daily']) : '',
          metrics: [metric('energy_consumed', 'kcal', kcal, 'manual')],
          serving: { amount: prng.int(1, 3), unit_name: prng.pick(['cup', 'serving', 'g', 'piece']) },
        };
      });
      metrics = [
        metric('energy_consumed', 'kcal', energy, 'manual'),
        metric('carbohydrate', 'g', prng.int(5, 120), 'manual'),
        metric('fat', 'g', prng.int(1, 60), 'manual'),
        metric('protein', 'g', prng.int(1, 60), 'manual'),
        metric('sodium', 'mg', prng.int(10, 2000), 'manual'),
        metric('dietary_fiber', 'g', prng.int(0, 15), 'manual'),
        metric('water', 'mL', prng.int(0, 750), 'manual'),
      ];
      extra.name = meal;
      extra.category = prng.pick(['meal', 'meal', 'food', 'other'] as const);
      extra.segments = [{ name: meal, metrics: metrics.slice(0, 4), food: foods }];
      break;
    }
    case 'intraday':
    case 'cgm': {
      const interval = ctx.type === 'cgm' ? 5 : ctx.intradayIntervalMinutes;
      start = localMidnight;
      end = localMidnight + 24 * HOUR - 1000;
      const times: string[] = [];
      for (let t = start; t <= end; t += interval * MINUTE) {
        // Points need not be contiguous: leave gaps the way devices do.
        if (!prng.chance(0.05)) times.push(isoSeconds(t));
      }
      const series = (type: string, unit: string, value: () => number): SeriesMetric => ({
        type,
        origin: 'device',
        unit,
        data_points: times.map((time) => ({ time, value: value() })),
      });
      metrics =
        ctx.type === 'cgm' || ctx.sourceType === 'dexcom'
          ? [series('blood_glucose', 'mg/dL', () => prng.int(70, 190))]
          : [
              series('steps', 'steps', () => prng.int(0, 400)),
              series('distance', 'm', () => prng.int(0, 300)),
            ];
      extra.granularity = { interval, unit: 'minutes' };
      tags = [
        { name: 'range_start', value: isoSeconds(start) },
        { name: 'range_end', value: isoSeconds(end) },
      ];
      break;
    }
    case 'summary': {
      start = localMidnight;
      end = localMidnight + 24 * HOUR - 1000;
      metrics = [
        metric('steps', 'steps', prng.int(1500, 18000)),
        metric('distance', 'm', prng.int(1000, 14000)),
        metric('floors', 'floors', prng.int(0, 25)),
        metric('active_duration', 's', prng.int(600, 9000)),
        metric('calories_burned', 'kcal', prng.int(1500, 3500)),
      ];
      break;
    }
    case 'workout': {
      const duration = prng.int(15, 90) * 60;
      metrics = [
        metric('duration', 's', duration),
        metric('calories_burned', 'kcal', prng.int(100, 900)),
        metric('distance', 'm', prng.int(0, 15000)),
        metric('average_heart_rate', 'bpm', prng.int(90, 165)),
      ];
      end = start + duration * 1000;
      extra.activity_type = prng.pick(['running', 'cycling', 'walking', 'swimming', 'strength_training']);
      break;
    }
    case 'sleep': {
      start = localMidnight - prng.int(1, 3) * HOUR - prng.int(0, 59) * MINUTE;
      const total = prng.int(300, 540) * 60;
      end = start + total * 1000;
      metrics = [
        metric('sleep_duration', 's', total),
        metric('deep_sleep_duration', 's', Math.floor(total * 0.2)),
        metric('light_sleep_duration', 's', Math.floor(total * 0.5)),
        metric('rem_sleep_duration', 's', Math.floor(total * 0.2)),
        metric('awake_duration', 's', prng.int(0, 3600)),
      ];
      break;
    }
  }
  if (end === start && ctx.type !== 'measurement') end = start + 60_000;
  return {
    version: '1.0',
    id: prng.hexId(),
    checksum: '',
    type: ctx.type,
    start_time: isoSeconds(start),
    end_time: isoSeconds(end),
    utc_offset: ctx.utcOffset,
    offset_origin: prng.pick(['source', 'source', 'profile', 'user_defined'] as const),
    user: { uid: ctx.user.uid, user_id: ctx.user.id, organization_id: ctx.orgId },
    log_id: prng.hexId().slice(0, 16),
    source: { type: ctx.sourceType, device: ctx.device },
    metrics,
    created_at: isoMillis(ctx.createdAtMs),
    deleted_at: null,
    tags,
    user_notes: [],
    ...extra,
  };
}

/**
 * The record as it can exist at `nowMs` (the sandbox never serves a record "measured" in the future of
 * its clock). A series (intraday, cgm) that has begun keeps the points up to now and
 * its range ends at the last one, as a day in progress does on the real platform; any other record
 * exists only once it has ended. null: nothing of it has happened yet.
 */
export function recordAsOf(record: V2Record, nowMs: number): V2Record | null {
  if (Date.parse(record.start_time) > nowMs) return null;
  if (Date.parse(record.end_time) <= nowMs) return record;
  if (record.type !== 'intraday' && record.type !== 'cgm') return null;
  let lastMs = Date.parse(record.start_time);
  const metrics = record.metrics.map((m) => {
    if (!('data_points' in m)) return m;
    const data_points = m.data_points.filter((p) => Date.parse(p.time) <= nowMs);
    for (const p of data_points) lastMs = Math.max(lastMs, Date.parse(p.time));
    return { ...m, data_points };
  });
  const end = isoSeconds(lastMs);
  const tags = record.tags.map((t) => (t.name === 'range_end' ? { ...t, value: end } : t));
  return { ...record, end_time: end, metrics, tags };
}

/** A changed copy of a record (new metric values), as a source re-sync would produce. */
export function changeRecord(prng: Prng, record: V2Record): V2Record {
  const metrics = record.metrics.map((m) =>
    'data_points' in m
      ? { ...m, data_points: m.data_points.map((p) => ({ ...p, value: p.value + prng.int(0, 3) })) }
      : { ...m, value: round(m.value + 1 + prng.int(0, 5), 1) },
  );
  return { ...record, metrics };
}
