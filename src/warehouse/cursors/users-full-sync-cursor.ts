/** `users:last_full_sync`: when users.sync last read the whole user list (moves with its last page). */
import { z } from 'zod';
import { defineCursor } from './define-cursor.ts';

export const usersFullSyncCursor = defineCursor(() => 'users:last_full_sync', z.object({ at: z.string() }));
