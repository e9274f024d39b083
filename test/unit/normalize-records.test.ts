/** Fixtures follow the spec's field tables (v2 "Common record fields", nutrition and intraday tables). */
import { describe, expect, it } from 'vitest';
import {
  normalizeConnectionEvent,
  normalizeItem,
  normalizeLegacyRecord,
  normalizeUser,
  routeFrame,
} from '../../src/normalize/normalize-item.ts';
import { normalizeRecord } from '../../src/normalize/normalize-record.ts';
import {
  food,
  metric,
  rawConnectionEvent,
  rawLegacyRecord,
  rawRecord,
  rawUser,
  recordUser,
  segment,
} from '../helpers/fixtures/index.ts';

/** A record of `type` with the values the assertions below name. */
const record = (type: string, overrides: Record<string, unknown> = {}) =>
  rawRecord(type, {
    id: '5b1f1d7e0e0a4b0001a1b2c3',
    checksum: '6f1ed002ab5595859014ebf0951522d9',
    end_time: '2024-03-01T08:30:00Z',
    utc_offset: -18000,
    user: recordUser('cust-42', { user_id: 'svc-42' }),
    log_id: 'src-log-1',
    source: { type: 'omron', device: { name: 'BP7000', type: 'blood_pressure_monitor' } },
    created_at: '2024-03-01T08:31:02.123Z',
    ...overrides,
  });

function ok<T>(result: { ok: true; value: T } | { ok: false; quarantine: { reason: string } }): T {
  if (!result.ok) throw new Error(`expected ok, got quarantine: ${result.quarantine.reason}`);
  return result.value;
}

function reason(result: { ok: boolean; quarantine?: { reason: string } }): string {
  expect(result.ok).toBe(false);
  return result.quarantine!.reason;
}

describe('measurement', () => {
  const raw = record('measurement', {
    metrics: [
      metric('systolic', 120, 'mmHg'),
      metric('diastolic', 80, 'mmHg'),
      metric('pulse', 61, 'bpm', 'manual'),
    ],
  });

  it('maps the common fields and metrics', () => {
    const n = ok(normalizeRecord(raw));
    expect(n.record).toMatchObject({
      id: raw.id,
      type: 'measurement',
      checksum: raw.checksum,
      version: '1.0',
      uid: 'cust-42',
      userId: 'svc-42',
      sourceType: 'omron',
      logId: 'src-log-1',
      startTime: '2024-03-01T08:00:00.000Z',
      endTime: '2024-03-01T08:30:00.000Z',
      utcOffset: -18000,
      offsetOrigin: 'source',
      createdAt: '2024-03-01T08:31:02.123Z',
      deletedAt: null,
      tags: '[]',
      userNotes: '[]',
    });
    expect(JSON.parse(n.record.sourceDevice!)).toEqual({ name: 'BP7000', type: 'blood_pressure_monitor' });
    expect(JSON.parse(n.record.raw)).toEqual(raw);
    expect(n.metrics.map((m) => [m.metricIndex, m.type, m.origin, m.unit, m.value])).toEqual([
      [0, 'systolic', 'device', 'mmHg', 120],
      [1, 'diastolic', 'device', 'mmHg', 80],
      [2, 'pulse', 'manual', 'bpm', 61],
    ]);
  });

  it('accepts type "measurements" and stores measurement', () => {
    expect(ok(normalizeRecord({ ...raw, type: 'measurements' })).record.type).toBe('measurement');
  });

  it('quarantines with a precise reason', () => {
    expect(reason(normalizeRecord({ ...raw, id: undefined }))).toMatch(/^invalid measurement: id: /);
    expect(reason(normalizeRecord({ ...raw, created_at: 'soon' }))).toBe(
      'invalid measurement: created_at: not a timestamp: "soon"',
    );
    expect(reason(normalizeRecord({ ...raw, utc_offset: 1.5 }))).toMatch(/utc_offset/);
    expect(reason(normalizeRecord('text'))).toBe('record is a string, not a JSON object');
    expect(reason(normalizeRecord(null))).toBe('record is null, not a JSON object');
    expect(reason(normalizeRecord({ ...raw, log_id: 'a\u0000b' }))).toMatch(/NUL/);
    expect(reason(normalizeRecord({ ...raw, log_id: '\ud800x' }))).toMatch(/surrogate/);
  });

  it('accepts numeric strings and ids given as numbers', () => {
    const n = ok(
      normalizeRecord({
        ...raw,
        id: 12345,
        metrics: [metric('pulse', '61.5', 'bpm')],
      }),
    );
    expect(n.record.id).toBe('12345');
    expect(n.metrics[0]!.value).toBe(61.5);
  });

  it('derives a stable checksum when the record has none', () => {
    const { checksum: _omit, ...noChecksum } = raw;
    const a = ok(normalizeRecord(noChecksum)).record.checksum;
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(ok(normalizeRecord(noChecksum)).record.checksum).toBe(a);
  });
});

describe('nutrition', () => {
  it('maps name, category, segments, food, serving and every metric', () => {
    const raw = record('nutrition', {
      name: 'Lunch',
      category: 'meal',
      metrics: [metric('energy_consumed', 650, 'kcal', 'manual')],
      segments: [
        segment('soup', [metric('sodium', 900, 'mg', 'manual')]),
        segment(
          'main',
          [],
          [
            food('Pasta', [1.5, 'cup'], [metric('carbohydrate', 70, 'g', 'manual')], 'Acme'),
            food('Water', [250, 'mL'], [metric('water', 250, 'mL', 'unknown')]),
          ],
        ),
      ],
    });
    const n = ok(normalizeRecord(raw));
    expect(n.record).toMatchObject({ type: 'nutrition', name: 'Lunch', category: 'meal' });
    expect(n.metrics).toHaveLength(1);
    expect(n.segments).toEqual([
      { segmentIndex: 0, name: 'soup' },
      { segmentIndex: 1, name: 'main' },
    ]);
    expect(n.segmentMetrics).toEqual([
      { segmentIndex: 0, metricIndex: 0, type: 'sodium', origin: 'manual', unit: 'mg', value: 900 },
    ]);
    expect(n.food).toEqual([
      {
        segmentIndex: 1,
        foodIndex: 0,
        name: 'Pasta',
        brand: 'Acme',
        servingAmount: 1.5,
        servingUnitName: 'cup',
      },
      { segmentIndex: 1, foodIndex: 1, name: 'Water', brand: '', servingAmount: 250, servingUnitName: 'mL' },
    ]);
    expect(n.foodMetrics.map((m) => [m.segmentIndex, m.foodIndex, m.type, m.value])).toEqual([
      [1, 0, 'carbohydrate', 70],
      [1, 1, 'water', 250],
    ]);
  });

  it('leaves out a serving amount it cannot read, naming it, and keeps the rest of the food item', () => {
    const n = ok(
      normalizeRecord(
        record('nutrition', { segments: [{ food: [{ name: 'Rice', serving: { amount: 'lots' } }] }] }),
      ),
    );
    expect(n.food).toEqual([
      {
        segmentIndex: 0,
        foodIndex: 0,
        name: 'Rice',
        brand: null,
        servingAmount: null,
        servingUnitName: null,
      },
    ]);
    expect(n.badValues).toEqual(['segments[0].food[0].serving.amount: not a number: "lots"']);
  });
});

describe('intraday', () => {
  const raw = record('intraday', {
    granularity: { interval: 15, unit: 'minutes' },
    tags: [
      { name: 'range_start', value: '2024-03-01T00:00:00Z' },
      { name: 'range_end', value: '2024-03-01T23:59:59Z' },
    ],
    metrics: [
      {
        type: 'steps',
        unit: 'steps',
        origin: 'device',
        data_points: [
          { time: '2024-03-01T00:00:00Z', value: 10 },
          { time: '2024-03-01T00:45:00Z', value: '25' },
        ],
      },
      { type: 'distance', unit: 'm', origin: 'device', data_points: [] },
    ],
  });

  it('turns each metric into one series of parallel arrays; string values become numbers', () => {
    const n = ok(normalizeRecord(raw));
    expect(n.record).toMatchObject({ granularityInterval: 15, granularityUnit: 'minutes' });
    expect(n.intraday).toEqual([
      {
        metricIndex: 0,
        metricType: 'steps',
        unit: 'steps',
        origin: 'device',
        times: ['2024-03-01T00:00:00.000Z', '2024-03-01T00:45:00.000Z'],
        values: [10, 25],
        badPoints: 0,
      },
      {
        metricIndex: 1,
        metricType: 'distance',
        unit: 'm',
        origin: 'device',
        times: [],
        values: [],
        badPoints: 0,
      },
    ]);
    expect(n.badPoints).toEqual([]);
    expect(JSON.parse(n.record.tags!)).toHaveLength(2);
  });

  it('keeps the good points of a series and names each bad one (null, empty, non-numeric, bad time)', () => {
    const bad = {
      ...raw,
      metrics: [
        {
          type: 'steps',
          data_points: [
            { time: '2024-03-01T00:00:00Z', value: 10 },
            { time: '2024-03-01T00:15:00Z', value: null },
            { time: '2024-03-01T00:30:00Z', value: '' },
            { time: '2024-03-01T00:45:00Z', value: 'n/a' },
            { time: 'yesterday', value: 4 },
            null,
            { time: '2024-03-01T01:00:00Z', value: '7' },
          ],
        },
      ],
    };
    const n = ok(normalizeRecord(bad));
    expect(n.intraday).toEqual([
      expect.objectContaining({
        times: ['2024-03-01T00:00:00.000Z', '2024-03-01T01:00:00.000Z'],
        values: [10, 7],
        badPoints: 5,
      }),
    ]);
    expect(n.badPoints).toEqual([
      'metrics[0].data_points[1].value: not a number: null',
      'metrics[0].data_points[2].value: not a number: ""',
      'metrics[0].data_points[3].value: not a number: "n/a"',
      'metrics[0].data_points[4].time: not a timestamp: "yesterday"',
      'metrics[0].data_points[5]: not an object: null',
    ]);
    // raw stays whole: every point, the bad ones included
    expect(JSON.parse(n.record.raw).metrics[0].data_points).toHaveLength(7);
  });

  it('a cgm series with a bad point keeps its good points too', () => {
    const cgm = record('cgm', {
      metrics: [
        {
          type: 'blood_glucose',
          unit: 'mg/dL',
          data_points: [{ time: '2024-03-01T00:00:00Z', value: 110 }, { time: '2024-03-01T00:05:00Z' }],
        },
      ],
    });
    const n = ok(normalizeRecord(cgm));
    expect(n.intraday).toEqual([expect.objectContaining({ values: [110], badPoints: 1 })]);
    expect(n.badPoints).toEqual(['metrics[0].data_points[1].value: not a number: undefined']);
  });
});

describe('other and unknown types', () => {
  it.each(['summary', 'workout', 'sleep', 'cgm', 'something_new'])(
    '%s keeps common fields, metrics and raw',
    (type) => {
      const raw = record(type, {
        metrics: [
          metric('steps', 5000, 'steps'),
          {
            type: 'blood_glucose',
            unit: 'mg/dL',
            origin: 'device',
            data_points: [{ time: '2024-03-01T00:00:00Z', value: 110 }],
          },
          'not a metric',
        ],
        extra: { x: 1 },
      });
      const n = ok(normalizeRecord(raw));
      expect(n.record.type).toBe(type);
      expect(n.metrics).toEqual([
        { metricIndex: 0, type: 'steps', origin: 'device', unit: 'steps', value: 5000 },
      ]);
      expect(n.intraday).toHaveLength(1);
      // Left out, and named: never silently.
      expect(n.badValues).toEqual(['metrics[2]: not an object: "not a metric"']);
      expect(JSON.parse(n.record.raw).extra).toEqual({ x: 1 });
    },
  );

  it('still needs id and created_at to be ordered and deduplicated', () => {
    expect(reason(normalizeRecord({ type: 'sleep', id: 'x' }))).toMatch(/^invalid sleep: created_at: /);
    expect(reason(normalizeRecord({ created_at: '2024-01-01T00:00:00Z', id: 'x' }))).toMatch(
      /^invalid record: type: /,
    );
  });
});

describe('users, connection events, legacy', () => {
  it('maps a user and redacts tokens in URLs', () => {
    const u = ok(
      normalizeUser(
        rawUser({
          uid: 'cust-1',
          marketplace: { token: 'abc', url: 'https://app.example/m?token=s3cr3t&x=1' },
          location: { timezone: 'America/Chicago', country_code: 'US' },
        }),
      ),
    );
    expect(u).toMatchObject({
      uid: 'cust-1',
      userId: 'svc-1',
      timezone: 'America/Chicago',
      countryCode: 'US',
      status: 'active',
    });
    expect(u.marketplaceUrl).toBe('https://app.example/m?token=[REDACTED]&x=1');
    expect(u.raw).not.toContain('s3cr3t');
    expect(reason(normalizeUser({ id: 'svc-1' }))).toMatch(/^invalid user: uid: /);
  });

  it('stores no per-user secret: marketplace.token and mobile.token redacted, also inside the URL and in quarantine', () => {
    const user = rawUser({
      uid: 'cust-1',
      marketplace: { token: 'mkt0a1b2c3d4e5', url: 'https://app.example/marketplace/mkt0a1b2c3d4e5' },
      mobile: { token: 'mob9f8e7d6c5b' },
      sources: [{ type: 'fitbit', token: 'src-token-77' }],
    });
    const u = ok(normalizeUser(user));
    const raw = JSON.parse(u.raw);
    expect(raw.marketplace).toEqual({
      token: '[REDACTED]',
      url: 'https://app.example/marketplace/[REDACTED]',
    });
    expect(raw.mobile).toEqual({ token: '[REDACTED]' });
    expect(raw.sources[0]).toEqual({ type: 'fitbit', token: '[REDACTED]' });
    expect(u.marketplaceUrl).toBe('https://app.example/marketplace/[REDACTED]');
    for (const secret of ['mkt0a1b2c3d4e5', 'mob9f8e7d6c5b', 'src-token-77'])
      expect(u.raw).not.toContain(secret);
    // A user that fails validation keeps its raw in quarantine: redacted there too.
    const bad = normalizeUser({ ...user, uid: '' });
    expect(bad.ok).toBe(false);
    const quarantined = bad.ok ? '' : bad.quarantine.raw;
    expect(JSON.parse(quarantined).mobile).toEqual({ token: '[REDACTED]' });
    for (const secret of ['mkt0a1b2c3d4e5', 'mob9f8e7d6c5b']) expect(quarantined).not.toContain(secret);
  });

  it('maps connection events of both actions', () => {
    const del = ok(
      normalizeConnectionEvent(
        rawConnectionEvent('delete', {
          id: 'ev-2',
          user: recordUser('cust-1'),
          source: { type: 'garmin' },
          created_at: '2025-07-02T00:00:00Z',
          event_time: '2025-07-01T23:59:00Z',
        }),
      ),
    );
    expect(del).toMatchObject({
      id: 'ev-2',
      action: 'delete',
      uid: 'cust-1',
      sourceType: 'garmin',
      deletedReason: 'user',
      profile: null,
    });
    expect(reason(normalizeConnectionEvent({ action: 'create' }))).toMatch(/^invalid connection event: id: /);
  });

  it('maps legacy records with both timestamp forms', () => {
    const r = ok(
      normalizeLegacyRecord(
        'routine',
        rawLegacyRecord({
          _id: '51552cd7fded0807c4000017',
          timestamp: '2013-03-10T00:00:00+00:00',
          utc_offset: '-05:00',
          steps: 10000,
          last_updated: '2013-03-10T12:10:03.000-05:00',
        }),
      ),
    );
    expect(r).toMatchObject({
      object: 'routine',
      id: '51552cd7fded0807c4000017',
      timestamp: '2013-03-10T00:00:00.000Z',
      lastUpdated: '2013-03-10T17:10:03.000Z',
      utcOffset: '-05:00',
      validated: false,
    });
    expect(reason(normalizeLegacyRecord('fitness', { timestamp: '2013-03-10T00:00:00Z' }))).toMatch(
      /^invalid legacy fitness record: _id: /,
    );
  });
});

describe('routeFrame and normalizeItem', () => {
  it('routes connection events by shape, everything else as records', () => {
    expect(routeFrame({ id: 'e', action: 'create', user: {}, source: {} })).toBe('connection_event');
    expect(routeFrame({ id: 'e', action: 'delete' })).toBe('connection_event');
    expect(routeFrame({ id: 'r', action: 'create', checksum: 'c' })).toBe('record');
    expect(routeFrame({ id: 'r', action: 'update' })).toBe('record');
    expect(routeFrame(record('measurement'))).toBe('record');
    expect(routeFrame([1])).toBe('record');
  });

  it('keeps unparseable text as a quarantine entry', () => {
    expect(normalizeItem({ kind: 'unparseable', text: '{"a":', reason: 'truncated frame' })).toEqual({
      kind: 'quarantine',
      value: { kind: 'unparseable', reason: 'truncated frame', raw: '{"a":' },
    });
    expect(normalizeItem({ kind: 'frame', raw: { action: 'create' } })).toMatchObject({
      kind: 'quarantine',
      value: { kind: 'frame' },
    });
  });
});
