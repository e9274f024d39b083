/**
 * The base of every error class of validic-sync. Its message is redacted once, here (the platform
 * token rides in URLs as `token=` / `access_token=`, and configured tokens are masked verbatim), so a
 * subclass passes its message as it is and never redacts again. `name` is the subclass's own name.
 */
import { redactKnownSecrets } from '../redact/redact-secrets.ts';

export class SyncError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(redactKnownSecrets(message), options.cause === undefined ? {} : { cause: options.cause });
    this.name = new.target.name;
  }
}
