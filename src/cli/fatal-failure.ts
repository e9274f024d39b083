/**
 * The failures that end a one-shot command at once, each with the setting to fix: the platform refused
 * the token (401, 403), a documented path of the organization answered 404 (a wrong base URL or org id),
 * or the platform's host name does not resolve. Such a failure repeats for every job of the run, so the
 * command stops instead of running them all and then advising "run the same command again". And the one
 * that ends it after a bounded wait: the platform not answering at all (`unansweredFailure`), which may
 * be an outage as well as a wrong port.
 */
import { type OrganizationConfig, organizationSchema } from '../config/schema.ts';
import {
  ConfigError,
  causeChain,
  hasErrorCode,
  NetworkError,
  UNRESOLVED_HOST_CODES,
  UserFacingError,
} from '../errors/index.ts';

/** How long a one-shot command waits for a platform that answers nothing before it gives up. */
export const UNANSWERED_LIMIT_MS = 30_000;

/** Which configured base URL a request went to, and the settings that name it and its credentials. */
interface BaseOf {
  urlEnv: string;
  urlKey: 'apiUrl' | 'streamsUrl' | 'legacyUrl';
  base: string;
  tokenEnv: string;
  orgEnv: string;
}

function baseOf(url: string, org: OrganizationConfig): BaseOf {
  const bases: BaseOf[] = [
    {
      urlEnv: 'VALIDIC_API_URL',
      urlKey: 'apiUrl',
      base: org.apiUrl,
      tokenEnv: 'VALIDIC_TOKEN',
      orgEnv: 'VALIDIC_ORG_ID',
    },
    {
      urlEnv: 'VALIDIC_STREAMS_URL',
      urlKey: 'streamsUrl',
      base: org.streamsUrl,
      tokenEnv: 'VALIDIC_TOKEN',
      orgEnv: 'VALIDIC_ORG_ID',
    },
    {
      urlEnv: 'VALIDIC_LEGACY_URL',
      urlKey: 'legacyUrl',
      base: org.legacyUrl,
      tokenEnv: 'VALIDIC_LEGACY_TOKEN (default VALIDIC_TOKEN)',
      orgEnv: 'VALIDIC_LEGACY_ORG_ID (default VALIDIC_ORG_ID)',
    },
  ];
  // The longest base that prefixes the URL: two bases may share a host and differ by path.
  const matching = bases
    .filter((b) => url.startsWith(b.base.replace(/\/+$/, '')))
    .sort((a, b) => b.base.length - a.base.length);
  return matching[0] ?? bases[0]!;
}

/**
 * Paths of the organization as a whole that the platform documents: a 404 there means the base URL
 * or the organization is wrong, not that one user or record is gone (those 404s are the jobs' to read).
 */
const ORGANIZATION_PATHS = [
  /\/organizations\/[^/]+\/users$/,
  /\/connections$/,
  /\/streams$/,
  /\/replay$/,
  /\/v1\/organizations\/[^/]+\.json$/,
  /\/v1\/organizations\/[^/]+\/(?!users\/)[^/]+(?:\/latest)?\.json$/,
];

interface HttpAnswer {
  status: number;
  url: string;
  message: string;
}

function httpAnswerOf(error: unknown): HttpAnswer | undefined {
  for (const link of causeChain(error)) {
    const { status, url, message } = link as { status?: unknown; url?: unknown; message?: unknown };
    if (typeof status === 'number' && typeof url === 'string')
      return { status, url, message: typeof message === 'string' ? message : '' };
  }
  return undefined;
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname.replace(/\/+$/, '');
  } catch {
    return '';
  }
}

/**
 * The failure, when it ends the command at once: a `ConfigError` (exit 2) naming the setting to fix.
 * Undefined for every other failure, which the command reports with the others.
 */
export function fatalFailure(error: unknown, org: OrganizationConfig): ConfigError | undefined {
  const answer = httpAnswerOf(error);
  if (answer && (answer.status === 401 || answer.status === 403)) {
    const base = baseOf(answer.url, org);
    return new ConfigError([
      {
        key: base.tokenEnv,
        message: `the platform refused the token of organization ${org.orgId} (${answer.message})`,
        fix: `set the organization's token; ${answer.status === 401 ? `401 is the answer to a valid token of another organization, so check ${base.orgEnv} too` : `403 is the answer to a token the platform does not know (mistyped, revoked or of another environment)`}`,
      },
    ]);
  }
  if (answer?.status === 404 && ORGANIZATION_PATHS.some((path) => path.test(pathOf(answer.url)))) {
    const base = baseOf(answer.url, org);
    return new ConfigError([
      {
        key: `${base.urlEnv} (organizations[].${base.urlKey})`,
        message: `a path the platform documents for every organization was not found (${answer.message})`,
        fix: `check ${base.urlEnv}: the base URL, path included (now ${base.base}; the platform's own is ${defaultBase(base.urlKey)}), and ${base.orgEnv}`,
      },
    ]);
  }
  const network = networkErrorOf(error);
  if (network && hasErrorCode(error, UNRESOLVED_HOST_CODES)) {
    const base = baseOf(network.url, org);
    return new ConfigError([
      {
        key: `${base.urlEnv} (organizations[].${base.urlKey})`,
        message: `its host name does not resolve (${network.message})`,
        fix: `check the host of ${base.urlEnv} (now ${base.base})`,
      },
    ]);
  }
  return undefined;
}

/** The platform's own base URL of a setting: the config schema's default. */
function defaultBase(key: 'apiUrl' | 'streamsUrl' | 'legacyUrl'): string {
  return organizationSchema.parse({ orgId: 'o', token: 't' })[key];
}

function networkErrorOf(error: unknown): NetworkError | undefined {
  for (const link of causeChain(error)) if (link instanceof NetworkError) return link;
  return undefined;
}

/** Whether a failure is the platform not answering at all (refused, reset, timed out, unreachable). */
export function isUnanswered(error: unknown): boolean {
  return networkErrorOf(error) !== undefined;
}

/** The failure of a command whose platform answered nothing for `seconds`: exit 1, the fix named. */
export function unansweredFailure(error: unknown, org: OrganizationConfig, seconds: number): UserFacingError {
  const network = networkErrorOf(error);
  const base = baseOf(network?.url ?? '', org);
  return new UserFacingError(
    `the platform did not answer for ${seconds} s: ${network?.message ?? (error as Error).message}`,
    {
      fix: `check ${base.urlEnv} (now ${base.base}: scheme, host and port) and that this machine reaches it (a proxy: HTTPS_PROXY); what was committed is kept, so run the command again once it answers`,
      cause: error,
    },
  );
}
