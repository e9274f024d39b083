/**
 * Which failures end a one-shot command at once, with the setting to fix (src/cli/fatal-failure.ts): a
 * refused token names the token (and the org id for a 401), a 404 on a path every organization has names
 * the base URL it went to, a host that does not resolve names its URL; a 404 of one user, a 5xx or a
 * refused connection is not fatal (the last ends the run only after UNANSWERED_LIMIT_MS).
 */
import { describe, expect, it } from 'vitest';
import { fatalFailure, isUnanswered, unansweredFailure } from '../../src/cli/fatal-failure.ts';
import { organizationSchema } from '../../src/config/schema.ts';
import { ConfigError, HttpError, NetworkError, PermanentHttpError } from '../../src/errors/index.ts';

const org = organizationSchema.parse({
  orgId: 'org-1',
  token: 'tok-1',
  apiUrl: 'https://proxy.example/validic/api',
  streamsUrl: 'https://proxy.example/validic/streams',
  legacyUrl: 'https://legacy.example',
});

const answer = (status: number, url: string) =>
  new PermanentHttpError({ method: 'GET', url, status, bodyExcerpt: '', messages: ['no'] });
const refused = (url: string, code: string) =>
  new NetworkError('GET', url, Object.assign(new Error(`connect ${code}`), { code }));

function problem(error: unknown): string {
  const fatal = fatalFailure(error, org);
  expect(fatal).toBeInstanceOf(ConfigError);
  return fatal!.message;
}

describe('fatal failures of a one-shot command', () => {
  it('names the token for a 403 and the org id too for a 401', () => {
    expect(
      problem(answer(403, 'https://proxy.example/validic/api/organizations/org-1/users?token=x')),
    ).toMatch(
      /VALIDIC_TOKEN: the platform refused the token of organization org-1 .*403 is the answer to a token the platform does not know/,
    );
    expect(problem(answer(401, 'https://proxy.example/validic/api/organizations/org-1/users'))).toMatch(
      /VALIDIC_TOKEN: .*401 is the answer to a valid token of another organization, so check VALIDIC_ORG_ID/,
    );
    expect(problem(answer(401, 'https://legacy.example/v1/organizations/org-1/fitness/latest.json'))).toMatch(
      /VALIDIC_LEGACY_TOKEN \(default VALIDIC_TOKEN\).*VALIDIC_LEGACY_ORG_ID/,
    );
  });

  it('names the base URL a 404 went to, for the paths every organization has', () => {
    expect(
      problem(answer(404, 'https://proxy.example/validic/api/organizations/org-1/users?limit=1000')),
    ).toMatch(
      /VALIDIC_API_URL \(organizations\[\]\.apiUrl\): a path the platform documents .*now https:\/\/proxy\.example\/validic\/api; the platform's own is https:\/\/api\.v2\.validic\.com/,
    );
    expect(problem(answer(404, 'https://proxy.example/validic/streams/streams'))).toMatch(
      /VALIDIC_STREAMS_URL/,
    );
    expect(problem(answer(404, 'https://proxy.example/validic/api/organizations/org-1/connections'))).toMatch(
      /VALIDIC_API_URL/,
    );
    expect(problem(answer(404, 'https://legacy.example/v1/organizations/org-1/routine/latest.json'))).toMatch(
      /VALIDIC_LEGACY_URL/,
    );
  });

  it('leaves the 404s of one user or record, 5xx, 429 and refused connections to the jobs', () => {
    for (const url of [
      'https://proxy.example/validic/api/organizations/org-1/users/u-1/measurements',
      'https://proxy.example/validic/api/organizations/org-1/users/u-1',
      'https://legacy.example/v1/organizations/org-1/users/u-1/fitness.json',
      'https://legacy.example/v1/organizations/org-1/users/u-1/fitness/r-1.json',
    ])
      expect(fatalFailure(answer(404, url), org), url).toBeUndefined();
    const server = new HttpError({
      method: 'GET',
      url: 'https://proxy.example/validic/api/organizations/org-1/users',
      status: 503,
      bodyExcerpt: '',
      messages: [],
      retryable: true,
    });
    expect(fatalFailure(server, org)).toBeUndefined();
    const down = refused('https://proxy.example/validic/api/organizations/org-1/users', 'ECONNREFUSED');
    expect(fatalFailure(down, org)).toBeUndefined();
    expect(isUnanswered(down)).toBe(true);
    expect(isUnanswered(server)).toBe(false);
  });

  it('names the URL whose host does not resolve, and the one that did not answer', () => {
    expect(
      problem(refused('https://legacy.example/v1/organizations/org-1/fitness.json', 'ENOTFOUND')),
    ).toMatch(/VALIDIC_LEGACY_URL \(organizations\[\]\.legacyUrl\): its host name does not resolve/);
    const down = refused('https://proxy.example/validic/streams/streams', 'ECONNREFUSED');
    const message = unansweredFailure(down, org, 31);
    expect(message.message).toMatch(/^the platform did not answer for 31 s: GET https:\/\/proxy\.example/);
    expect(message.fix).toMatch(
      /check VALIDIC_STREAMS_URL \(now https:\/\/proxy\.example\/validic\/streams:/,
    );
  });
});
