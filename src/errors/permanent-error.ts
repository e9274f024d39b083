/**
 * Do not retry: the same call would fail the same way (a 4xx other than 429 and the stream-rebalancing
 * 422, an answer of a shape the platform never sends, an id that cannot go in a URL). `classifyFailure`
 * calls it `permanent`; the queue maps it to BullMQ's `UnrecoverableError`.
 */
import { SyncError } from './sync-error.ts';

export class PermanentError extends SyncError {}
