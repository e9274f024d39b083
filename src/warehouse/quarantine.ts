/** Quarantine read side: how many bad items, of which kind, for which reason (for `status`). */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export interface QuarantineCount {
  kind: string;
  reason: string;
  /** Distinct items. */
  items: number;
  /** Deliveries, counting redeliveries of the same item. */
  seen: number;
  lastSeenAt: Date;
}

export async function countQuarantine(db: Kysely<Database>, orgId?: string): Promise<QuarantineCount[]> {
  let query = db
    .selectFrom('validic_sync.quarantine')
    .select([
      'kind',
      'reason',
      sql<number>`count(*)::int`.as('items'),
      sql<number>`sum(seen_count)::int`.as('seen'),
      sql<Date>`max(last_seen_at)`.as('last_seen_at'),
    ])
    .groupBy(['kind', 'reason'])
    .orderBy('items', 'desc')
    .orderBy('kind');
  if (orgId) query = query.where('org_id', '=', orgId);
  const rows = await query.execute();
  return rows.map((r) => ({
    kind: r.kind,
    reason: r.reason,
    items: r.items,
    seen: r.seen,
    lastSeenAt: r.last_seen_at,
  }));
}

/** Distinct quarantined items per kind. */
export async function countQuarantineByKind(
  db: Kysely<Database>,
  orgId?: string,
): Promise<Record<string, number>> {
  let query = db
    .selectFrom('validic_sync.quarantine')
    .select(['kind', sql<number>`count(*)::int`.as('items')])
    .groupBy('kind');
  if (orgId) query = query.where('org_id', '=', orgId);
  const rows = await query.execute();
  return Object.fromEntries(rows.map((r) => [r.kind, r.items]));
}
