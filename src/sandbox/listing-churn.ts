/**
 * The `listingChurn` fault: a listing that changes between its pages, as a live platform's does while a
 * client pages through it (records updated, deleted and added; users deleted and added).
 */
import type { SandboxCore } from './core.ts';
import { addLegacyRecord, addUser, deleteLegacyRecord, deleteUser, updateLegacyRecord } from './mutations.ts';
import type { LegacyObject, LegacyRecord } from './types.ts';

/** Whether this page (one with more pages after it) is one the switch still changes its listing after. */
function churnDue(core: SandboxCore, hasMore: boolean): number {
  const churn = core.faults.current.listingChurn;
  if (!churn || !hasMore || core.faults.churnedPages >= churn.pages) return 0;
  core.faults.churnedPages++;
  return 1;
}

/**
 * After a page of a legacy `latest` listing: `legacy` records of the listing (`listed`, the whole window
 * as served) are updated (last_updated now) or deleted, and one record is added, stamped now.
 */
export function churnLegacyListing(
  core: SandboxCore,
  object: LegacyObject,
  listed: readonly LegacyRecord[],
  hasMore: boolean,
): void {
  if (!churnDue(core, hasMore)) return;
  const count = core.faults.current.listingChurn?.legacy ?? 0;
  const candidates = [...listed];
  for (let i = 0; i < count && candidates.length > 0; i++) {
    const [record] = candidates.splice(Math.floor(core.faults.draw() * candidates.length), 1);
    if (!record || !core.state.legacyStore(object).has(record._id)) continue;
    if (core.faults.draw() < 0.5) updateLegacyRecord(core, object, record._id, { extras: { churned: true } });
    else deleteLegacyRecord(core, object, record._id);
  }
  const owner = listed[0]?.user_id ?? [...core.state.legacyUsers.keys()][0];
  if (owner) addLegacyRecord(core, { object, user_id: owner });
}

/** After a page of the v2 users listing: `users` users deleted and as many added. */
export function churnUsersListing(core: SandboxCore, hasMore: boolean): void {
  if (!churnDue(core, hasMore)) return;
  const count = core.faults.current.listingChurn?.users ?? 0;
  for (let i = 0; i < count; i++) {
    const uids = [...core.state.users.keys()];
    const uid = uids[Math.floor(core.faults.draw() * uids.length)];
    if (uid) deleteUser(core, uid);
    addUser(core, {});
  }
}
