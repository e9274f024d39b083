/**
 * prepareBatch: the CPU half of the loader. It must sort every item into its kind (quarantine
 * included, in order), and it must give the event loop turns while it works, because the stream runs
 * it while the previous micro-batch's write, on the same thread, needs the loop to make progress.
 */
import { describe, expect, it } from 'vitest';
import type { RawItem } from '../../src/pipeline/batch.ts';
import { prepareBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { metric, rawRecord } from '../helpers/fixtures/index.ts';

const record = (i: number) =>
  rawRecord('measurement', { id: `rec-${i}`, metrics: [metric('body_weight', 70 + i / 100, 'kg')] });

const frames = (raws: unknown[]): RawItem[] => raws.map((raw) => ({ kind: 'frame', raw }));

describe('prepareBatch', () => {
  it('sorts records and quarantines every bad item with its reason, keeping their order', async () => {
    const items = frames([record(1), { type: 'measurement', id: 'broken' }, record(2)]);
    const prepared = await prepareBatch({ orgId: 'org-1', arrivedVia: 'stream', items });
    expect(prepared.sorted.records.map((r) => r.record.id)).toEqual(['rec-1', 'rec-2']);
    expect(prepared.sorted.quarantine).toHaveLength(1);
    expect(prepared.sorted.quarantine[0]!.reason).not.toBe('');
  });

  it('lets other callbacks run while it normalizes a big batch, and none while it normalizes a small one', async () => {
    const countTurns = async (size: number) => {
      let turns = 0;
      let running = true;
      const tick = () => {
        if (!running) return;
        turns += 1;
        setImmediate(tick);
      };
      setImmediate(tick);
      const prepared = await prepareBatch({
        orgId: 'org-1',
        arrivedVia: 'stream',
        items: frames(Array.from({ length: size }, (_, i) => record(i))),
      });
      running = false;
      expect(prepared.sorted.records).toHaveLength(size);
      return turns;
    };
    // 500 items (a stream micro-batch) in slices of 25: the loop gets a turn between slices.
    expect(await countTurns(500)).toBeGreaterThanOrEqual(10);
    // Up to one slice runs in one go.
    expect(await countTurns(20)).toBe(0);
  });
});
