/**
 * `audit:rotation`: the last user the scheduled completeness audit reached (uid, byte order); the next
 * tick goes on after it, round to the first user at the end (src/audit/README.md, "Which cells").
 */
import { z } from 'zod';
import { defineCursor } from './define-cursor.ts';

export const auditRotationCursor = defineCursor(() => 'audit:rotation', z.object({ afterUid: z.string() }));
