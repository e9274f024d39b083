/**
 * Every arrival path reads numbers exactly as the platform sent them: a REST page (the HTTP client's
 * JSON, here the v2 records request and a legacy page's envelope) and a stream or replay `data` frame.
 * A number a double would change (`12345678901234567890`, `70.50`) reaches the normalizer as its text,
 * so the record's `raw` and its stored metric keep it.
 */
import { describe, expect, it } from 'vitest';
import { normalizeItem } from '../../src/normalize/normalize-item.ts';
import { classifyFrame } from '../../src/stream/frame-kinds.ts';
import { numberField, pageSignature } from '../../src/validic/requests.ts';
import { createV2Client } from '../../src/validic/v2-client.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const mock = useMockAgent(ORIGIN);

const RECORD = `{"id":"r1","type":"measurement","checksum":"c1","created_at":"2024-03-01T08:00:01Z",
  "metrics":[{"type":"count","unit":"n","value":12345678901234567890},{"type":"body_weight","unit":"kg","value":70.50}]}`;

function expectExact(raw: unknown) {
  const n = normalizeItem({ kind: 'record', raw });
  expect(n.kind).toBe('record');
  if (n.kind !== 'record') return;
  expect(n.value.record.raw).toContain('"value":12345678901234567890');
  expect(n.value.record.raw).toContain('"value":70.50');
  expect(n.value.metrics.map((m) => JSON.stringify(m.value))).toEqual(['12345678901234567890', '70.50']);
}

describe('numbers exactly as sent, on every arrival path', () => {
  it('a REST page (the HTTP client)', async () => {
    mock.serve(() => ({ body: `{"data":[${RECORD}]}` }));
    const v2 = createV2Client({ http: mock.http(), apiUrl: ORIGIN, orgId: 'org1', token: 'tok' });
    const [raw] = await v2.fetchRecords({
      uid: 'u1',
      resource: 'measurements',
      startDate: '2024-03-01',
      endDate: '2024-03-01',
    });
    expectExact(raw);
  });

  it('a stream or replay data frame', () => {
    const frame = classifyFrame({ type: 'event', event: 'data', data: RECORD, receivedAt: 1 });
    expect(frame.kind).toBe('data');
    if (frame.kind === 'data') expectExact(frame.payload);
  });

  it('an envelope number kept as text still counts, and an id kept as text still pages', () => {
    const frame = classifyFrame({
      type: 'event',
      event: 'data',
      data: '{"meta":{"limit":1.0e2,"total":25},"id":98765432109876543210}',
      receivedAt: 1,
    });
    if (frame.kind !== 'data') throw new Error('not a data frame');
    const { meta } = frame.payload as { meta: Record<string, unknown> };
    expect(numberField(meta, 'limit')).toBe(100);
    expect(numberField(meta, 'total')).toBe(25);
    expect(pageSignature([frame.payload as Record<string, unknown>])).toBe('98765432109876543210');
  });
});
