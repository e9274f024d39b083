/**
 * The platform answers errors in several shapes (PLATFORM-FACTS.md): `{errors:[...]}`,
 * `{errors:{field:[...]}}`, `{message}`, `{status, error}`, `{code, message}` and plain text. This pulls
 * human-readable messages out of any of them; the status code stays the primary signal.
 */
import { redactKnownSecrets } from '../redact/redact-secrets.ts';

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
