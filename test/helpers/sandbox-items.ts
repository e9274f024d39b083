/**
 * A sandbox's truth as one batch's items: every user, record and connection event, and the first 20
 * legacy records, for tests that load a warehouse directly (applyBatch) rather than through a sync.
 */

import type { RawItem } from '../../src/pipeline/batch.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';

export function sandboxItems(sandbox: Sandbox): RawItem[] {
  return [
    ...sandbox.truth.users().map((raw): RawItem => ({ kind: 'user', raw })),
    ...sandbox.truth.records().map((raw): RawItem => ({ kind: 'record', raw })),
    ...sandbox.truth.connections().map((raw): RawItem => ({ kind: 'connection_event', raw })),
    ...sandbox.truth
      .legacyRecords()
      .slice(0, 20)
      .map(({ object, ...raw }): RawItem => ({ kind: 'legacy', object, raw })),
  ];
}
