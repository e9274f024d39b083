/**
 * Who may use the admin listener (metrics, readiness, the queue dashboard). With `http.adminToken`
 * (`VALIDIC_ADMIN_TOKEN`) set, a request must carry it: `Authorization: Bearer <token>` (Prometheus'
 * `authorization` setting, curl), or Basic auth with the token as the password (a browser prompts for
 * it, which the dashboard needs). Without a token only loopback clients are served, whatever
 * `HTTP_HOST` binds. `/healthz` is always open: liveness probes carry no credentials and it says nothing.
 */
import { secretsEqual } from '../runtime/secrets-equal.ts';

export type AdminAccess = { allowed: true } | { allowed: false; status: 401 | 403; message: string };

const OPEN_PATHS = new Set(['/healthz']);

export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** The credential in an Authorization header: a Bearer token, or the password of Basic auth. */
export function credentialOf(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const [scheme, value = ''] = authorization.trim().split(/\s+/, 2);
  if (/^bearer$/i.test(scheme ?? '')) return value;
  if (/^basic$/i.test(scheme ?? '')) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

export function checkAdminAccess(request: {
  path: string;
  remoteAddress: string | undefined;
  authorization: string | undefined;
  token: string | undefined;
}): AdminAccess {
  if (OPEN_PATHS.has(request.path)) return { allowed: true };
  if (!request.token) {
    return isLoopbackAddress(request.remoteAddress)
      ? { allowed: true }
      : {
          allowed: false,
          status: 403,
          message: 'the admin listener serves loopback clients only; set VALIDIC_ADMIN_TOKEN to allow others',
        };
  }
  const credential = credentialOf(request.authorization);
  return secretsEqual(request.token, credential)
    ? { allowed: true }
    : { allowed: false, status: 401, message: 'admin token required (Authorization: Bearer <token>)' };
}
