/**
 * One raw item of a batch (batch.ts `RawItem`) → a normalized row of the right kind, or a quarantine
 * entry. Pure; never throws for bad input.
 */
import type { RawItem } from '../pipeline/batch.ts';
import { normalizeConnectionEvent } from './connection-event.ts';
import { normalizeLegacyRecord } from './legacy-record.ts';
import { normalizeRecord } from './normalize-record.ts';
import type {
  ConnectionEventRow,
  LegacyRecordRow,
  NormalizedRecord,
  QuarantineEntry,
  UserRow,
} from './normalized-types.ts';
import { routeFrame } from './route-frame.ts';
import { normalizeUser } from './user.ts';

export type NormalizedItem =
  | { kind: 'record'; value: NormalizedRecord }
  | { kind: 'user'; value: UserRow }
  | { kind: 'connection_event'; value: ConnectionEventRow }
  | { kind: 'legacy'; value: LegacyRecordRow }
  | { kind: 'quarantine'; value: QuarantineEntry };

function unwrap<K extends NormalizedItem['kind'], T>(
  kind: K,
  result: { ok: true; value: T } | { ok: false; quarantine: QuarantineEntry },
): NormalizedItem {
  return result.ok
    ? ({ kind, value: result.value } as NormalizedItem)
    : { kind: 'quarantine', value: result.quarantine };
}

export function normalizeItem(item: RawItem): NormalizedItem {
  switch (item.kind) {
    case 'record':
      return unwrap('record', normalizeRecord(item.raw));
    case 'user':
      return unwrap('user', normalizeUser(item.raw));
    case 'connection_event':
      return unwrap('connection_event', normalizeConnectionEvent(item.raw));
    case 'legacy':
      return unwrap('legacy', normalizeLegacyRecord(item.object, item.raw));
    case 'frame':
      return routeFrame(item.raw) === 'connection_event'
        ? unwrap('connection_event', normalizeConnectionEvent(item.raw, 'frame'))
        : unwrap('record', normalizeRecord(item.raw, 'frame'));
    case 'unparseable':
      return { kind: 'quarantine', value: { kind: 'unparseable', reason: item.reason, raw: item.text } };
    default: {
      const unknownItem = item as { kind?: unknown };
      return {
        kind: 'quarantine',
        value: {
          kind: 'unknown',
          reason: `unknown item kind ${JSON.stringify(unknownItem.kind)}`,
          raw: JSON.stringify(item) ?? String(item),
        },
      };
    }
  }
}
