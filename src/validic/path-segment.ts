/**
 * Ids from the platform (user `uid`, legacy user and record `_id`, stream ids) and organization ids
 * from the config go into URL paths. `buildUrl` percent-encodes every segment, so `/`, `?`, `#` and
 * `%` (hence `%2e%2e`) stay inside their segment; what encoding cannot neutralize is a segment that is
 * empty, `.` or `..`: the URL parser removes or resolves those ("dot-segments"), so an id of `..` would
 * address the parent endpoint. Control characters and absurd lengths are refused too: no real id holds
 * them, and they would only reach logs and error messages.
 */

import type { z } from 'zod';

/** Longer than any real id; bounds what an id can put in a URL, a log line or a job id. */
export const MAX_PATH_ID_LENGTH = 1024;

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `value` cannot be one URL path segment, or undefined when it can. */
export function pathSegmentProblem(value: string): string | undefined {
  if (value === '') return 'is empty';
  if (value === '.' || value === '..') return `is the dot-segment "${value}"`;
  if (CONTROL.test(value)) return 'holds control characters';
  if (value.length > MAX_PATH_ID_LENGTH) return `is longer than ${MAX_PATH_ID_LENGTH} characters`;
  return undefined;
}

/** For zod schemas of ids that go into paths (`.superRefine(refinePathSegment)`): the same check. */
export function refinePathSegment(value: string, ctx: z.RefinementCtx): void {
  const problem = pathSegmentProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: `cannot be used in a URL path: it ${problem}` });
}
