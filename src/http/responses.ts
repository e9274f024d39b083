/**
 * What the platform answered: bounded bodies, the messages of every error-body shape the platform
 * documents, and the typed error (src/errors/) of a non-2xx answer.
 */
import type { Dispatcher } from 'undici';
import {
  BodyTooLargeError,
  HttpError,
  PermanentHttpError,
  RateLimitedError,
  ResponseBodyError,
  StreamRebalancingError,
} from '../errors/index.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { maskSecrets } from '../redact/url-secret-values.ts';
import { isRetryableStatus, parseRetryAfter } from './retry-policy.ts';

/**
 * Reading answers with bounded memory: a 2xx body whole, up to `maxBytes` and checked against its
 * `Content-Length`; an error body up to 64 KiB for the excerpt; a redirect body dropped.
 */
const MiB = 1024 * 1024;
/**
 * Largest response body, by the memory target (peak RSS ≤ 300 MB per worker, bench/README.md): a body
 * is held about four times while read and parsed (chunks, joined buffer, string, parsed objects ≈ 1.8×
 * the text), so 8 MiB costs ≈ 32 MB per request, ≈ 130 MB with the default 4 requests in flight. The
 * largest real page is far smaller: a user's 30 days of 5-minute CGM is ≈ 0.4 MB in the sandbox, a
 * month of minute-level intraday a few MB. A larger body is a `BodyTooLargeError` (permanent, clear).
 */
export const DEFAULT_MAX_BODY_BYTES = 8 * MiB;
/** Error bodies are read up to this size for the excerpt and messages; the rest is dropped. */
const ERROR_BODY_BYTES = 64 * 1024;

/** Reads a whole body, refusing more than `maxBytes`, checking Content-Length against what arrived. */
export async function readBody(
  res: Dispatcher.ResponseData,
  maxBytes: number,
  method: string,
  redactedUrl: string,
): Promise<string> {
  const declared = Number(headerValue(res.headers['content-length']) ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.body.destroy();
    throw new BodyTooLargeError(method, redactedUrl, maxBytes);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    received += buf.length;
    if (received > maxBytes) {
      res.body.destroy();
      throw new BodyTooLargeError(method, redactedUrl, maxBytes);
    }
    chunks.push(buf);
  }
  if (Number.isFinite(declared) && received !== declared) {
    throw new ResponseBodyError(
      method,
      redactedUrl,
      res.statusCode,
      `body cut off (${received} of ${declared} bytes)`,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function readErrorBody(res: Dispatcher.ResponseData): Promise<string> {
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      received += buf.length;
      if (received >= ERROR_BODY_BYTES) {
        res.body.destroy();
        break;
      }
    }
  } catch {
    // The excerpt is best effort: a cut error body still leaves the status as the signal.
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function discardBody(res: Dispatcher.ResponseData): Promise<void> {
  try {
    await res.body.dump({ limit: ERROR_BODY_BYTES });
  } catch {
    // Nothing to keep from a redirect body.
  }
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The platform answers errors in several shapes (docs/platform.md, "Responses"): `{errors:[...]}`,
 * `{errors:{field:[...]}}`, `{message}`, `{status, error}`, `{code, message}` and plain text. This pulls
 * human-readable messages out of any of them; the status code stays the primary signal.
 */
const EXCERPT_CHARS = 500;

/** A short, redacted excerpt of a body for error messages and logs. */
export function bodyExcerpt(text: string, maxChars = EXCERPT_CHARS): string {
  const trimmed = text.trim();
  const cut = trimmed.length > maxChars ? `${trimmed.slice(0, maxChars)}…` : trimmed;
  return redactKnownSecrets(cut);
}

/** Messages found in an error body (redacted); empty when the body carries none. */
export function extractErrorMessages(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    // Plain text (the v2 400 answer): the text itself is the message.
    return [bodyExcerpt(trimmed, 300)];
  }
  const messages: string[] = [];
  collect(parsed, undefined, messages, 0);
  return [...new Set(messages)].slice(0, 20).map((m) => redactKnownSecrets(m));
}

function collect(value: unknown, field: string | undefined, out: string[], depth: number): void {
  if (depth > 4 || value === null || value === undefined) return;
  if (typeof value === 'string') {
    if (value.trim() !== '') out.push(field ? `${field}: ${value}` : value);
    return;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return;
  if (Array.isArray(value)) {
    for (const item of value) collect(item, field, out, depth + 1);
    return;
  }
  if (typeof value !== 'object') return;
  const obj = value as Record<string, unknown>;
  // `{errors: [...]}` and `{errors: {field: [...]}}`.
  const errors = obj.errors;
  if (Array.isArray(errors)) collect(errors, field, out, depth + 1);
  else if (errors && typeof errors === 'object') {
    for (const [key, v] of Object.entries(errors as Record<string, unknown>)) {
      collect(v, field ? `${field}.${key}` : key, out, depth + 1);
    }
  } else if (typeof errors === 'string') collect(errors, field, out, depth + 1);
  // `{message}`, `{code, message}`, `{status, error}`; `error` may itself be an object.
  for (const key of ['message', 'error', 'error_description', 'detail']) {
    const v = obj[key];
    if (typeof v === 'string') collect(v, field, out, depth + 1);
    else if (v && typeof v === 'object') collect(v, field, out, depth + 1);
  }
  if (out.length === 0 && obj.code !== undefined && typeof obj.code !== 'object') {
    out.push(`code ${String(obj.code)}`);
  }
}

/** The typed error of a non-2xx answer (src/errors/), with a bounded, redacted excerpt of its body. */

/** 429 → `RateLimitedError`, 422 on a stream → `StreamRebalancingError`, 5xx → `HttpError`, else permanent. */
export async function errorFromResponse(
  method: string,
  redactedUrl: string,
  res: Dispatcher.ResponseData,
  now: number,
  secrets: readonly string[],
  isStream = false,
): Promise<Error> {
  const text = maskSecrets(await readErrorBody(res), secrets);
  const details = {
    method,
    url: redactedUrl,
    status: res.statusCode,
    bodyExcerpt: bodyExcerpt(text),
    messages: extractErrorMessages(text),
  };
  if (res.statusCode === 429) {
    return new RateLimitedError(
      { ...details, retryable: true },
      parseRetryAfter(res.headers['retry-after'], now),
    );
  }
  if (isStream && res.statusCode === 422) return new StreamRebalancingError(details);
  if (isRetryableStatus(res.statusCode)) return new HttpError({ ...details, retryable: true });
  return new PermanentHttpError(details);
}
