/**
 * `poll:<uid>:<resource>`: the last window records.poll loaded for one user and resource (with its
 * records, same transaction). Many and small: `status` leaves them out; the ledger and lag say more.
 */
import { z } from 'zod';
import { defineCursor } from './define-cursor.ts';

export const RECORDS_POLL_CURSOR_PREFIX = 'poll:';

export const recordsPollCursor = defineCursor(
  (uid: string, resource: string) => `${RECORDS_POLL_CURSOR_PREFIX}${uid}:${resource}`,
  z.object({ startDate: z.string(), endDate: z.string(), at: z.string() }),
);
