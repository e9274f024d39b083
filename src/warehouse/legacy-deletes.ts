/**
 * Legacy deletes in the warehouse: the delete checks asked (what a pass may check and the budget's
 * count of them), and marking a legacy record deleted once the platform answered 404.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

/**
 * The queue of legacy delete checks, `validic_sync.legacy_delete_checks` (migration 0014): stored legacy
 * records a complete window read no longer listed, each to be asked for by id (one request). The rows
 * asked in the last hour (`asked_at`) are what a pass counts against the share of the request budget,
 * so the share holds fleet-wide, whichever process runs the pass. Why: the header of
 * src/legacy/confirm-legacy-deletes.ts.
 */
export interface LegacyDeleteCheck {
  id: string;
  user_id: string;
}

/**
 * After a complete read of `window`: every stored, not deleted record of the object whose stored
 * `last_updated` lies in the window and that the read did not list becomes a suspect (a suspect already
 * answered is asked again: it went missing again); suspects the read did list are dropped (they exist).
 * Returns how many stored records the read left out. Sends no request.
 */
export async function queueLegacyDeleteChecks(
  db: Kysely<Database>,
  input: { orgId: string; object: string; window: { start: Date; end: Date }; listed: readonly string[] },
): Promise<number> {
  const { orgId, object, window } = input;
  const listed = [...input.listed];
  await sql`
    delete from validic_sync.legacy_delete_checks
    where org_id = ${orgId} and object = ${object} and id = any(${listed}::text[])
      and outcome is null and (asked_at is null or asked_at < now() - interval '1 hour')`.execute(db);
  const queued = await sql<{ id: string }>`
    insert into validic_sync.legacy_delete_checks as c (org_id, object, id, user_id)
    select org_id, object, id, user_id from validic.legacy_records
    where org_id = ${orgId} and object = ${object} and deleted_at is null and user_id is not null
      and last_updated >= ${window.start} and last_updated <= ${window.end}
      and not (id = any(${listed}::text[]))
    on conflict (org_id, object, id) do update
      set user_id = excluded.user_id,
          absent_since = case when c.outcome is null then c.absent_since else excluded.absent_since end,
          outcome = null
    returning id`.execute(db);
  return queued.rows.length;
}

/**
 * Claims the next suspects of `object` to ask (oldest first), as many as the pass may: at most
 * `perPass`, and no more than `perHour` minus what the org's passes asked in the last hour. A claim
 * older than an hour without an answer (a pass that died) is claimed again. Runs under an advisory lock
 * per org, so passes of several processes count each other's claims.
 */
export async function claimLegacyDeleteChecks(
  db: Kysely<Database>,
  input: { orgId: string; object: string; perPass: number; perHour: number },
): Promise<{ claimed: LegacyDeleteCheck[]; askedLastHour: number }> {
  const { orgId, object } = input;
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`validic-sync:legacy-delete-checks:${orgId}`}))`.execute(
      trx,
    );
    // Answers older than the accounting hour are no longer needed; suspects already deleted by other
    // means (a push's 404) need no request.
    await sql`
      delete from validic_sync.legacy_delete_checks c
      where c.org_id = ${orgId}
        and ((c.outcome is not null and (c.asked_at is null or c.asked_at < now() - interval '1 hour'))
          or (c.outcome is null and c.asked_at is null and exists (
            select 1 from validic.legacy_records r
            where r.org_id = c.org_id and r.object = c.object and r.id = c.id and r.deleted_at is not null)))`.execute(
      trx,
    );
    const asked = await sql<{ n: number }>`
      select count(*)::int as n from validic_sync.legacy_delete_checks
      where org_id = ${orgId} and asked_at > now() - interval '1 hour'`.execute(trx);
    const askedLastHour = asked.rows[0]?.n ?? 0;
    const take = Math.min(input.perPass, Math.floor(input.perHour) - askedLastHour);
    if (take <= 0) return { claimed: [], askedLastHour };
    const claimed = await sql<LegacyDeleteCheck>`
      update validic_sync.legacy_delete_checks set asked_at = now()
      where org_id = ${orgId} and object = ${object} and id in (
        select id from validic_sync.legacy_delete_checks
        where org_id = ${orgId} and object = ${object} and outcome is null
          and (asked_at is null or asked_at < now() - interval '1 hour')
        order by absent_since, id
        limit ${take})
      returning id, user_id`.execute(trx);
    return { claimed: claimed.rows, askedLastHour };
  });
}

/** Records the answers of asked suspects: 404 (`deleted`) or found (`found`). */
export async function resolveLegacyDeleteChecks(
  db: Kysely<Database>,
  input: { orgId: string; object: string; deleted: readonly string[]; found: readonly string[] },
): Promise<void> {
  for (const [outcome, ids] of [
    ['deleted', input.deleted],
    ['found', input.found],
  ] as const) {
    if (ids.length === 0) continue;
    await sql`
      update validic_sync.legacy_delete_checks set outcome = ${outcome}
      where org_id = ${input.orgId} and object = ${input.object} and id = any(${[...ids]}::text[])`.execute(
      db,
    );
  }
}

/** Gives back claims that were never asked (a pass that stopped early): they cost no request. */
export async function releaseLegacyDeleteChecks(
  db: Kysely<Database>,
  input: { orgId: string; object: string; ids: readonly string[] },
): Promise<void> {
  if (input.ids.length === 0) return;
  await sql`
    update validic_sync.legacy_delete_checks set asked_at = null
    where org_id = ${input.orgId} and object = ${input.object} and outcome is null
      and id = any(${[...input.ids]}::text[])`.execute(db);
}

/** Suspects not answered yet (of one object, or of every object of the org). */
export async function countPendingLegacyDeleteChecks(
  db: Kysely<Database>,
  orgId: string,
  object?: string,
): Promise<number> {
  const rows = await sql<{ n: number }>`
    select count(*)::int as n from validic_sync.legacy_delete_checks
    where org_id = ${orgId} and outcome is null
      and (${object ?? null}::text is null or object = ${object ?? null})`.execute(db);
  return rows.rows[0]?.n ?? 0;
}

/** Delete checks the org's passes asked since `since` (the budget plan's measured share). */
export async function countLegacyDeleteChecksAsked(
  db: Kysely<Database>,
  orgId: string,
  since: Date,
): Promise<number> {
  const rows = await sql<{ n: number }>`
    select count(*)::int as n from validic_sync.legacy_delete_checks
    where org_id = ${orgId} and asked_at > ${since}`.execute(db);
  return rows.rows[0]?.n ?? 0;
}

/**
 * Marks stored legacy records deleted (`validic.legacy_records.deleted_at`, the time the worker found
 * out): the platform answered 404 for each of them by id. The rows stay (the legacy views leave them
 * out); a later version with a strictly later last_updated revives one (load-kinds.ts).
 */

/** Returns the ids newly marked (rows already deleted keep their first deleted_at; unknown ids are ignored). */
export async function markLegacyDeleted(
  db: Kysely<Database>,
  orgId: string,
  object: string,
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .updateTable('validic.legacy_records')
    .set({ deleted_at: sql`now()`, updated_at: sql`now()` })
    .where('org_id', '=', orgId)
    .where('object', '=', object)
    .where('id', 'in', [...ids])
    .where('deleted_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((r) => r.id).sort();
}
