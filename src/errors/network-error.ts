/** The connection failed, timed out or was cut (after the last attempt). Retryable by a later job run. */
import { maskSecrets } from '../redact/url-secret-values.ts';
import { errorCodeOf } from './cause-chain.ts';
import { SyncError } from './sync-error.ts';

export class NetworkError extends SyncError {
  readonly method: string;
  readonly url: string;
  readonly code: string | undefined;
  readonly retryable = true;
  constructor(method: string, redactedUrl: string, cause: unknown, secrets: readonly string[] = []) {
    const code = errorCodeOf(cause);
    const reason = maskSecrets(cause instanceof Error ? cause.message : String(cause), secrets);
    super(`${method} ${redactedUrl} failed: ${code ?? 'network error'} (${reason})`, { cause });
    this.method = method;
    this.url = redactedUrl;
    this.code = code;
  }
}
