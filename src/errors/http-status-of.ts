/** The HTTP status carried by any of our HTTP errors, else undefined. */
import { HttpError } from './http-error.ts';
import { PermanentHttpError } from './permanent-http-error.ts';
import { RedirectRefusedError } from './redirect-refused-error.ts';
import { ResponseBodyError } from './response-body-error.ts';

export function httpStatusOf(err: unknown): number | undefined {
  if (
    err instanceof HttpError ||
    err instanceof PermanentHttpError ||
    err instanceof RedirectRefusedError ||
    err instanceof ResponseBodyError
  ) {
    return err.status;
  }
  return undefined;
}
