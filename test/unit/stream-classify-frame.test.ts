import { describe, expect, it } from 'vitest';
import { classifyFrame, extractCreatedAt } from '../../src/stream/frame-kinds.ts';
import { toRawItems } from '../../src/stream/stream-writer.ts';
import type { SseFrame } from '../../src/stream/types.ts';
import { rawRecord } from '../helpers/fixtures/index.ts';

const frame = (event: string, data: string): SseFrame => ({ type: 'event', event, data, receivedAt: 1 });

describe('classifyFrame', () => {
  it('passes a data frame payload through raw, with its created_at', () => {
    const record = rawRecord('sleep', { id: 'r1', created_at: '2026-03-01T10:00:00.123Z', extra: { x: 1 } });
    expect(classifyFrame(frame('data', JSON.stringify(record)))).toEqual({
      kind: 'data',
      payload: record,
      createdAt: '2026-03-01T10:00:00.123Z',
      createdAtMs: Date.parse('2026-03-01T10:00:00.123Z'),
    });
    expect(classifyFrame(frame('data', '{"id":"c1","action":"create"}'))).toEqual({
      kind: 'data',
      payload: { id: 'c1', action: 'create' },
      createdAt: undefined,
      createdAtMs: undefined,
    });
  });

  it('marks bad JSON and non-object data as bad, keeping the text', () => {
    const bad = classifyFrame(frame('data', '{"id":"r1",'));
    expect(bad).toMatchObject({ kind: 'bad', text: '{"id":"r1",', event: 'data' });
    expect(bad.kind === 'bad' && bad.reason).toMatch(/not valid JSON/);
    expect(classifyFrame(frame('data', '[1,2]'))).toMatchObject({
      kind: 'bad',
      reason: 'data frame is not a JSON object',
    });
    expect(classifyFrame(frame('data', 'null'))).toMatchObject({ kind: 'bad' });
  });

  it('treats pokes as pokes even when their body is not JSON, reading their ts when it is a time', () => {
    expect(
      classifyFrame(frame('poke', '{"ts":"2017-11-28T15:49:35.700Z","members":{"count":1,"max":3}}')),
    ).toEqual({
      kind: 'poke',
      payload: { ts: '2017-11-28T15:49:35.700Z', members: { count: 1, max: 3 } },
      tsMs: Date.parse('2017-11-28T15:49:35.700Z'),
    });
    expect(classifyFrame(frame('poke', 'ping'))).toEqual({ kind: 'poke', payload: 'ping', tsMs: undefined });
    expect(classifyFrame(frame('poke', '{"ts":"not a time"}'))).toMatchObject({
      kind: 'poke',
      tsMs: undefined,
    });
  });

  it('reports other event names as other', () => {
    expect(classifyFrame(frame('rule', '{}'))).toEqual({ kind: 'other', event: 'rule', data: '{}' });
    expect(classifyFrame(frame('message', 'hi'))).toEqual({ kind: 'other', event: 'message', data: 'hi' });
  });

  it('makes an oversized frame bad with a reason naming the limit', () => {
    const c = classifyFrame({
      type: 'oversized',
      event: 'data',
      bytes: 9_000_000,
      maxFrameBytes: 8_388_608,
      excerpt: 'event: data\ndata: {"id"',
      receivedAt: 1,
    });
    expect(c).toMatchObject({ kind: 'bad', event: 'data', text: 'event: data\ndata: {"id"' });
    expect(c.kind === 'bad' && c.reason).toMatch(/larger than 8388608 bytes/);
  });

  it('extracts created_at only when it is a parseable string', () => {
    expect(extractCreatedAt({ created_at: '2026-01-02T03:04:05Z' })).toBe('2026-01-02T03:04:05Z');
    expect(extractCreatedAt({ created_at: 'yesterday' })).toBeUndefined();
    expect(extractCreatedAt({ created_at: 12 })).toBeUndefined();
    expect(extractCreatedAt('x')).toBeUndefined();
  });

  it('maps committed frames onto loader items', () => {
    expect(
      toRawItems([
        { kind: 'data', payload: { id: 'a' }, createdAt: undefined, receivedAt: 1, bytes: 10 },
        { kind: 'bad', text: '{', reason: 'bad json', receivedAt: 2, bytes: 1 },
      ]),
    ).toEqual([
      { kind: 'frame', raw: { id: 'a' } },
      { kind: 'unparseable', text: '{', reason: 'bad json' },
    ]);
  });
});
