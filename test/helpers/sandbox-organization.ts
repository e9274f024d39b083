/**
 * An `organizations[]` entry (config input) pointed at a sandbox, for tests that build a config in
 * process; sandboxEnv (cli.ts) is the same for a CLI child. A request budget far above what tests use.
 */
import type { Sandbox } from '../../src/sandbox/index.ts';

export function sandboxOrganization(sandbox: Sandbox, extra: Record<string, unknown> = {}) {
  return {
    orgId: sandbox.orgId,
    token: sandbox.token,
    apiUrl: sandbox.apiUrl,
    streamsUrl: sandbox.streamsUrl,
    legacyUrl: sandbox.legacyUrl,
    requestsPerHour: 10_000_000,
    ...extra,
  };
}
