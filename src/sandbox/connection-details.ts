/**
 * What a client needs to reach a running sandbox: its URLs, org ids and tokens. `validic-sync sandbox`
 * prints them; the benchmarks' sandbox thread hands them to the measured side.
 */
import type { Sandbox } from './index.ts';

export type SandboxConnection = Pick<
  Sandbox,
  'apiUrl' | 'streamsUrl' | 'legacyUrl' | 'orgId' | 'token' | 'legacyOrgId' | 'legacyToken'
>;

export function connectionDetails(sandbox: SandboxConnection): SandboxConnection {
  return {
    apiUrl: sandbox.apiUrl,
    streamsUrl: sandbox.streamsUrl,
    legacyUrl: sandbox.legacyUrl,
    orgId: sandbox.orgId,
    token: sandbox.token,
    legacyOrgId: sandbox.legacyOrgId,
    legacyToken: sandbox.legacyToken,
  };
}
