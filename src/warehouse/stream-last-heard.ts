/**
 * When an org's primary stream was last heard from: the newest `lastLiveAt` among its connection
 * checkpoints (at most 3 rows, read by primary key). A live connection writes it
 * with each commit and at least once a minute while only pokes arrive, whichever process holds it; the
 * recent poll's fallback reads it (src/budget/recent-poll.ts).
 */
import { type Kysely, sql } from 'kysely';
import { MAX_STREAM_CONNECTIONS } from '../validic/platform-limits.ts';
import { streamPositionCursor } from './cursors.ts';
import type { Database } from './database.ts';

export async function readStreamLastHeard(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<number | undefined> {
  // Exact keys, not a prefix: the org's other cursors (one per user and resource) may be many.
  const keys = Array.from(
    { length: MAX_STREAM_CONNECTIONS },
    (_, slot) => streamPositionCursor(streamName, slot).key,
  );
  const { rows } = await sql<{ last: string | null }>`
    select max(value->>'lastLiveAt') as last from validic_sync.checkpoints
    where org_id = ${orgId} and key in (${sql.join(keys)})`.execute(db);
  const last = rows[0]?.last;
  const ms = last ? Date.parse(last) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}
