/**
 * The secret values a request URL carries (`token`, `access_token`, ...). A server may echo a token
 * back bare in an error body ("token abc… not authorized"), where the `token=` pattern cannot catch it;
 * the client masks these exact values in every body excerpt and message it builds.
 */
import { REDACTED, SECRET_PARAMS } from './redact-secrets.ts';

export function secretValuesOf(url: URL): string[] {
  const values: string[] = [];
  for (const [name, value] of url.searchParams) {
    if (SECRET_PARAMS.includes(name.toLowerCase()) && value.length >= 4) values.push(value);
  }
  return values;
}

export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}
