/**
 * The settings that point validic-sync at a running sandbox, as environment variables, and the two
 * forms a shell reads them in: `export` lines to paste, and a dotenv file (`KEY='value'` lines) that
 * `set -a; . FILE; set +a` loads and that every validic-sync command reads when it is the working
 * folder's `.env`.
 */
import type { SandboxConnection } from '../sandbox/connection-details.ts';

/** The sandbox's platform is not rate-limited: a budget this large never paces the worker. */
export const UNPACED_REQUESTS_PER_HOUR = 1_000_000;

export function sandboxEnvironment(
  sandbox: SandboxConnection,
  options: { requestsPerHour?: number } = {},
): Record<string, string> {
  return {
    VALIDIC_ORG_ID: sandbox.orgId,
    VALIDIC_TOKEN: sandbox.token,
    VALIDIC_API_URL: sandbox.apiUrl,
    VALIDIC_STREAMS_URL: sandbox.streamsUrl,
    VALIDIC_LEGACY_URL: sandbox.legacyUrl,
    VALIDIC_LEGACY_ORG_ID: sandbox.legacyOrgId,
    VALIDIC_LEGACY_TOKEN: sandbox.legacyToken,
    // The sandbox serves plain http on loopback; the worker refuses that unless told.
    VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true',
    VALIDIC_REQUESTS_PER_HOUR: String(options.requestsPerHour ?? UNPACED_REQUESTS_PER_HOUR),
  };
}

/** A value in single quotes, which sh and dotenv read as it is (a quote inside closes, escapes, reopens). */
function quote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** `export KEY='value'` lines, to paste into a shell. */
export function formatShellExports(env: Record<string, string>): string[] {
  return Object.entries(env).map(([key, value]) => `export ${key}=${quote(value)}`);
}

/**
 * A dotenv file: `KEY='value'` lines, which both dotenv and sh read as they are. A single quote or a
 * line break in a value has no form both read: refused (URLs, ids and tokens hold neither).
 */
export function formatEnvFile(env: Record<string, string>): string {
  const lines = Object.entries(env).map(([key, value]) => {
    if (/['\n\r]/.test(value)) throw new RangeError(`${key} holds a quote or a line break`);
    return `${key}='${value}'`;
  });
  return `${lines.join('\n')}\n`;
}
