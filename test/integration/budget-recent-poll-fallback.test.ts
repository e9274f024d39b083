/**
 * Stream-first planning against real PostgreSQL: the plan reads when the primary stream was last heard
 * from its connection checkpoints (any slot), turns the recent poll off while that is recent (once the
 * first sync is complete) and on over the outage's days once it is not; the reconciliation stream's
 * checkpoints do not count as the primary.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { readBudgetPlan } from '../../src/budget/read-budget-plan.ts';
import { configSchema } from '../../src/config/schema.ts';
import { streamCursor } from '../../src/warehouse/cursors.ts';
import { readStreamLastHeard } from '../../src/warehouse/stream-bookkeeping.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const ORG = 'org-fallback';
const NOW = Date.parse('2026-11-27T12:00:00Z');
const t = useTestDatabase();

async function writeProgress(streamName: string, slot: number, lastLiveAt: string) {
  const key = streamCursor(streamName, slot).key;
  await sql`
    insert into validic_sync.checkpoints (org_id, key, value) values (${ORG}, ${key}, ${JSON.stringify({ lastLiveAt })}::jsonb)
    on conflict (org_id, key) do update set value = excluded.value`.execute(t.warehouse.db);
}

describe('the recent poll falls back on the stream being unheard', () => {
  const config = configSchema.parse({ organizations: [{ orgId: ORG, token: 't' }] });
  const org = config.organizations[0]!;

  it('reads the newest lastLiveAt of the primary, not of the reconciliation stream', async () => {
    expect(await readStreamLastHeard(t.warehouse.db, ORG, 'validic-sync')).toBeUndefined();
    await writeProgress('validic-sync-reconcile', 0, '2026-11-27T11:59:00.000Z');
    expect(await readStreamLastHeard(t.warehouse.db, ORG, 'validic-sync')).toBeUndefined();
    await writeProgress('validic-sync', 0, '2026-11-27T10:00:00.000Z');
    await writeProgress('validic-sync', 2, '2026-11-27T11:30:00.000Z');
    expect(await readStreamLastHeard(t.warehouse.db, ORG, 'validic-sync')).toBe(
      Date.parse('2026-11-27T11:30:00Z'),
    );
  });

  it('plans no recent poll while the stream is heard, and the outage days once it is not', async () => {
    await writeProgress('validic-sync', 1, '2026-11-27T11:55:00.000Z');
    // Heard, but the first sync (src/budget/first-sync.ts) has not covered every user yet: it polls.
    const first = await readBudgetPlan(t.warehouse.db, config, org, NOW);
    expect(first.recentPoll).toMatchObject({ polling: true, firstSync: true });
    await sql`insert into validic_sync.first_syncs (org_id, stream_name, completed_at)
      values (${ORG}, 'validic-sync', now())`.execute(t.warehouse.db);
    const healthy = await readBudgetPlan(t.warehouse.db, config, org, NOW);
    expect(healthy.recentPoll).toMatchObject({ mode: 'fallback', polling: false });
    expect(healthy.plan.perHour.recent).toBe(0);

    // Twenty minutes after the last sign of life (past the 15-minute fallback).
    const down = await readBudgetPlan(t.warehouse.db, config, org, NOW + 20 * 60_000);
    expect(down.recentPoll).toMatchObject({ mode: 'fallback', polling: true, days: 0 });
    expect(down.recentPoll.streamLastHeardAt).toBe('2026-11-27T11:55:00.000Z');
  });
});
