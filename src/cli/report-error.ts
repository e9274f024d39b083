/**
 * Turns any error that reaches the top of a command into one readable message and an exit code.
 * Expected errors (config, usage, user-facing) print without a stack; unexpected ones print their
 * message and a hint, with the stack only when LOG_LEVEL is debug or trace.
 */

import { ConfigError, HttpError, UsageError, UserFacingError } from '../errors/index.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { EXIT_FAILED, EXIT_USAGE } from './exit-codes.ts';

export interface ReportedError {
  message: string;
  exitCode: number;
}

export function describeError(error: unknown, verbose = false): ReportedError {
  if (error instanceof ConfigError || error instanceof UsageError) {
    return { message: `validic-sync: ${withFix(error)}`, exitCode: EXIT_USAGE };
  }
  if (error instanceof UserFacingError) {
    return { message: `validic-sync: ${withFix(error)}`, exitCode: EXIT_FAILED };
  }
  if (error instanceof HttpError) {
    const hint =
      error.status === 401 || error.status === 403
        ? ' Fix: check VALIDIC_ORG_ID and VALIDIC_TOKEN (the token must belong to the organization).'
        : '';
    return { message: `validic-sync: ${error.message}.${hint}`, exitCode: EXIT_FAILED };
  }
  const err = error instanceof Error ? error : new Error(String(error));
  const detail = verbose && err.stack ? `\n${err.stack}` : '\n(set LOG_LEVEL=debug for the stack trace)';
  return {
    message: redactKnownSecrets(`validic-sync: unexpected error: ${err.message}${detail}`),
    exitCode: EXIT_FAILED,
  };
}

function withFix(error: UserFacingError): string {
  return error.fix ? `${error.message}\nFix: ${error.fix}` : error.message;
}
