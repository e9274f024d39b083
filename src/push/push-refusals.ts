/**
 * A minute whose notifications were refused (429) at `push.ratePerMinute`: recorded in
 * `validic_sync.push_refusals`, and covered by org-level legacy `latest` windows queued as push fetches
 * (mode `refused`), since a refused notification is lost unless something reads what it announced.
 * Why and how: README.md, "`push-refusals.ts`".
 */
import { type Kysely, sql } from 'kysely';
import type { LegacyObject } from '../validic/legacy-objects.ts';
import type { Database } from '../warehouse/database.ts';
import { storePushFetches } from '../warehouse/push-store.ts';
import { refusedMinuteFetches } from './push-fetch-of-item.ts';

/** Which orgs a refusal counted against `key` may have lost data of, and the objects to re-read. */
export interface RefusalRecovery {
  orgId: string;
  /** Empty when legacy.sync already reads the org's latest windows (legacy.enabled). */
  objects: readonly LegacyObject[];
}

/** Refusals after the first of a minute are written only every this many (one row update each). */
export const REFUSALS_PER_WRITE = 100;

/** Whether the `refused`-th refusal of a minute is one to write (the first, then every 100th). */
export const refusalToRecord = (refused: number) => refused === 1 || refused % REFUSALS_PER_WRITE === 0;

/**
 * Records the minute (its count only grows) and queues its recovery windows, in one transaction.
 * Returns the recovery fetches written.
 */
export async function recordPushRefusal(
  db: Kysely<Database>,
  input: {
    key: string;
    now: number;
    /** Refusals so far this minute, fleet-wide. */
    refused: number;
    recoveries: readonly RefusalRecovery[];
    /** Records are updated before they are announced: each window starts this long before the minute. */
    lagMs: number;
    coalesceMs: number;
  },
): Promise<number> {
  const minuteStart = Math.floor(input.now / 60_000) * 60_000;
  return db.transaction().execute(async (trx) => {
    await sql`
      insert into validic_sync.push_refusals as r (org_id, minute, refused)
      values (${input.key}, ${new Date(minuteStart)}, ${input.refused})
      on conflict (org_id, minute) do update set refused = greatest(r.refused, excluded.refused)`.execute(
      trx,
    );
    // A later write of the same minute (the 100th refusal) merges into the same pending rows, counting
    // no new item; it repairs a first write that failed.
    const items = input.refused === 1 ? 1 : 0;
    const fetches = input.recoveries.flatMap((r) =>
      refusedMinuteFetches({
        orgId: r.orgId,
        objects: r.objects,
        minuteStart,
        lagMs: input.lagMs,
        coalesceMs: input.coalesceMs,
      }).map((f) => ({ ...f, items })),
    );
    return storePushFetches(trx, fetches, { now: input.now });
  });
}
