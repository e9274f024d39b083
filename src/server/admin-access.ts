/**
 * Who may use the admin listener (metrics, readiness, the queue dashboard).
 *
 * - The Host header must name this listener: a loopback name (`localhost`, `127.0.0.1`, `::1`), the
 *   address it is bound to when that is a specific one, or a name of `http.allowedHosts`
 *   (`HTTP_ALLOWED_HOSTS`); anything else is refused (421). A web page a browser loads from another
 *   site can make the browser send requests to a listener on its own host once the site's name
 *   resolves to 127.0.0.1 (DNS rebinding); such requests carry the site's name as their Host.
 * - With `http.adminToken` (`VALIDIC_ADMIN_TOKEN`) set, a request must carry it: `Authorization: Bearer
 *   <token>` (Prometheus' `authorization` setting, curl), or Basic auth with the token as the password
 *   (a browser prompts for it, which the dashboard needs).
 * - Without a token only loopback clients are served, whatever `HTTP_HOST` binds, and only when the
 *   request carries no proxy header (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`, `Via`, …): a reverse
 *   proxy on the same host makes every client it forwards a loopback one, and says so in those headers.
 * - `/healthz` is always open: liveness probes carry no credentials (nor a name of ours as their Host)
 *   and it says nothing.
 */
import { secretsEqual } from '../runtime/secrets-equal.ts';

export type AdminAccess = { allowed: true } | { allowed: false; status: 401 | 403 | 421; message: string };

const OPEN_PATHS = new Set(['/healthz']);

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/** Headers a proxy adds to what it forwards: their presence means the peer is not the client. */
const PROXY_HEADERS = [
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'via',
];

export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** The host name a Host header names, without its port, brackets or a trailing dot, lower-cased. */
export function hostNameOf(host: string | undefined): string | undefined {
  const value = host?.trim().toLowerCase();
  if (!value) return undefined;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed) return bracketed[1];
  // An IPv6 address without brackets has several colons and no port.
  const name = (value.split(':').length > 2 ? value : value.replace(/:\d+$/, '')).replace(/\.$/, '');
  return name || undefined;
}

/**
 * The names the admin listener answers to: the loopback names, the bound address when it is a
 * specific one (not 0.0.0.0 or ::), and the configured ones.
 */
export function adminHostNames(input: { bindHost: string; allowedHosts: readonly string[] }): Set<string> {
  const names = new Set(LOOPBACK_NAMES);
  const bound = hostNameOf(input.bindHost);
  if (bound && bound !== '0.0.0.0' && bound !== '::') names.add(bound);
  for (const host of input.allowedHosts) {
    const name = hostNameOf(host);
    if (name) names.add(name);
  }
  return names;
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

type Headers = Record<string, string | string[] | undefined>;

export function checkAdminAccess(request: {
  path: string;
  remoteAddress: string | undefined;
  headers: Headers;
  token: string | undefined;
  /** adminHostNames(...) */
  hostNames: ReadonlySet<string>;
}): AdminAccess {
  if (OPEN_PATHS.has(request.path)) return { allowed: true };
  const { headers } = request;
  const host = hostNameOf(typeof headers.host === 'string' ? headers.host : undefined);
  if (!host || !request.hostNames.has(host)) {
    return {
      allowed: false,
      status: 421,
      message: `the admin listener does not answer to the Host ${JSON.stringify((host ?? '').slice(0, 100))}; add the name to HTTP_ALLOWED_HOSTS (http.allowedHosts) if it is one of this worker's`,
    };
  }
  if (!request.token) {
    const proxied = PROXY_HEADERS.some((name) => headers[name] !== undefined);
    return isLoopbackAddress(request.remoteAddress) && !proxied
      ? { allowed: true }
      : {
          allowed: false,
          status: 403,
          message: proxied
            ? 'a request forwarded by a proxy is not a loopback client; set VALIDIC_ADMIN_TOKEN to allow it'
            : 'the admin listener serves loopback clients only; set VALIDIC_ADMIN_TOKEN to allow others',
        };
  }
  const authorization = typeof headers.authorization === 'string' ? headers.authorization : undefined;
  return secretsEqual(request.token, credentialOf(authorization))
    ? { allowed: true }
    : { allowed: false, status: 401, message: 'admin token required (Authorization: Bearer <token>)' };
}
