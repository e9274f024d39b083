/** A body larger than `maxBodyBytes`: refused, not retried (it would be as large next time). */
import { PermanentError } from './permanent-error.ts';

export class BodyTooLargeError extends PermanentError {
  readonly url: string;
  readonly limitBytes: number;
  constructor(method: string, redactedUrl: string, limitBytes: number) {
    super(
      `${method} ${redactedUrl} answered with a body larger than ${limitBytes} bytes; ` +
        'raise the HTTP client option maxBodyBytes or ask for smaller pages (lower limit, shorter date windows)',
    );
    this.url = redactedUrl;
    this.limitBytes = limitBytes;
  }
}
