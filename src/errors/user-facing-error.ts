/**
 * An expected failure (database unreachable, stream limit reached): the CLI prints its message and
 * `fix` without a stack trace and exits 1 (src/cli/report-error.ts). Its subclasses `ConfigError` and
 * `UsageError` exit 2.
 */
import { SyncError } from './sync-error.ts';

export class UserFacingError extends SyncError {
  /** What the user can do about it, printed after the message. */
  readonly fix: string | undefined;
  constructor(message: string, options: { fix?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.fix = options.fix;
  }
}
