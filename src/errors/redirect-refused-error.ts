/** A redirect to another host (or too many hops): refused so the token in the URL never leaks. */
import { PermanentError } from './permanent-error.ts';

export class RedirectRefusedError extends PermanentError {
  readonly status: number;
  constructor(method: string, redactedUrl: string, status: number, reason: string) {
    super(`${method} ${redactedUrl} answered ${status} redirect, refused: ${reason}`);
    this.status = status;
  }
}
