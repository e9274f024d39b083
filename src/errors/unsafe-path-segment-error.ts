/**
 * An id that cannot be one URL path segment (src/validic/path-segment.ts says why). A PermanentError:
 * the same id fails the same way again.
 */
import { PermanentError } from './permanent-error.ts';

export class UnsafePathSegmentError extends PermanentError {
  readonly segment: string;
  constructor(segment: string, problem: string) {
    super(`refused to put ${JSON.stringify(segment.slice(0, 80))} in a URL path: it ${problem}`);
    this.segment = segment;
  }
}
