/**
 * Builds request URLs with the URL API. Base URLs may carry a path prefix (`http://127.0.0.1:9/api`):
 * the prefix is kept and path segments are appended, each percent-encoded (a uid may hold `/` or `?`).
 * A segment that encoding cannot keep in its place (empty, `.`, `..`, control characters; see
 * path-segment.ts) throws `UnsafePathSegmentError` instead of addressing another endpoint.
 */
import { UnsafePathSegmentError } from '../errors/index.ts';
import { pathSegmentProblem } from './path-segment.ts';

export type QueryValue = string | number | boolean | undefined | null;

export function buildUrl(
  base: string,
  segments: readonly string[],
  query: Record<string, QueryValue> = {},
): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch (cause) {
    throw new TypeError(
      `invalid base URL ${JSON.stringify(base)}: expected e.g. https://api.v2.validic.com`,
      {
        cause,
      },
    );
  }
  for (const segment of segments) {
    const problem = pathSegmentProblem(segment);
    if (problem) throw new UnsafePathSegmentError(segment, problem);
  }
  const prefix = url.pathname.replace(/\/+$/, '');
  url.pathname = `${prefix}/${segments.map((s) => encodeURIComponent(s)).join('/')}`;
  url.hash = '';
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
  }
  return url;
}
