/** Bad command-line input: the CLI prints the message and the fix, and exits 2. */
import { UserFacingError } from './user-facing-error.ts';

export class UsageError extends UserFacingError {
  constructor(message: string, fix?: string) {
    super(message, fix ? { fix } : {});
  }
}
