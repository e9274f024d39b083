/** The answer had a shape the platform never sends: not retried, it would be the same next time. */
import { PermanentError } from './permanent-error.ts';

export class UnexpectedResponseError extends PermanentError {
  constructor(what: string, detail: string) {
    super(
      `unexpected response from ${what}: ${detail}; check the configured base URL points at the platform`,
    );
  }
}
