/**
 * Each worker process's measure of its clock against the platform's (validic_sync.platform_clock): the
 * process writes it, `status` reads it.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export interface StoredPlatformClock {
  reporter: string;
  offsetMs: number;
  uncertaintyMs: number;
  observedAt: Date;
}

/** Writes this process's measure, and deletes those no process has written for a day. */
export async function recordPlatformClock(db: Kysely<Database>, measure: StoredPlatformClock): Promise<void> {
  await db
    .insertInto('validic_sync.platform_clock')
    .values({
      reporter: measure.reporter,
      offset_ms: Math.round(measure.offsetMs),
      uncertainty_ms: Math.round(Math.min(measure.uncertaintyMs, Number.MAX_SAFE_INTEGER)),
      observed_at: measure.observedAt,
    })
    .onConflict((oc) =>
      oc.column('reporter').doUpdateSet({
        offset_ms: (eb) => eb.ref('excluded.offset_ms'),
        uncertainty_ms: (eb) => eb.ref('excluded.uncertainty_ms'),
        observed_at: (eb) => eb.ref('excluded.observed_at'),
        written_at: sql<Date>`now()`,
      }),
    )
    .execute();
  await db
    .deleteFrom('validic_sync.platform_clock')
    .where('written_at', '<', sql<Date>`now() - interval '1 day'`)
    .execute();
}

/** The measures written in the last hour, the largest offset first. */
export async function readPlatformClocks(db: Kysely<Database>): Promise<StoredPlatformClock[]> {
  const rows = await db
    .selectFrom('validic_sync.platform_clock')
    .select(['reporter', 'offset_ms', 'uncertainty_ms', 'observed_at'])
    .where('written_at', '>', sql<Date>`now() - interval '1 hour'`)
    .orderBy(sql`abs(offset_ms)`, 'desc')
    .execute();
  return rows.map((r) => ({
    reporter: r.reporter,
    offsetMs: Number(r.offset_ms),
    uncertaintyMs: Number(r.uncertainty_ms),
    observedAt: r.observed_at,
  }));
}
