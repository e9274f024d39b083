/**
 * One legacy record by id: GET /v1/organizations/{org}/users/{user}/{object}/{id}.json, answered as
 * `{ summary, <object>: [record] }`. The legacy client pages lists only, so this targeted read (what a
 * push notification announces) is built here from the same parts: the org's HTTP client (budget,
 * retries, redaction), its legacy base URL, org id, token and `Service-Version`.
 *
 * The URL is always built from configuration, never taken from a notification: a push body must not be
 * able to send our access token to a host of its choosing.
 */

import type { OrganizationConfig } from '../config/schema.ts';
import { httpStatusOf } from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import { buildUrl } from '../validic/build-url.ts';
import { listItems, type RawObject } from '../validic/envelopes.ts';

export interface GetLegacyRecordInput {
  userId: string;
  object: string;
  recordId: string;
  signal?: AbortSignal;
}

/**
 * One legacy record by id, telling a 404 apart (`found: false`): the record is gone from the platform
 * (deleted, or its user is), which is what marks a stored row deleted (see confirm-legacy-deletes.ts).
 */
export async function findLegacyRecord(
  org: { config: OrganizationConfig; http: HttpClient },
  input: GetLegacyRecordInput,
): Promise<{ found: true; items: RawObject[] } | { found: false }> {
  const config = org.config;
  const accessToken = config.legacyToken ?? config.token;
  const url = buildUrl(
    config.legacyUrl,
    [
      'v1',
      'organizations',
      config.legacyOrgId ?? config.orgId,
      'users',
      input.userId,
      input.object,
      `${input.recordId}.json`,
    ],
    { access_token: accessToken, expanded: 1 },
  );
  const headers: Record<string, string> = config.legacy.serviceVersion
    ? { 'service-version': config.legacy.serviceVersion }
    : {};
  let body: unknown;
  try {
    body = await org.http.getJson<unknown>(url, {
      headers,
      budgetKey: accessToken,
      ...(input.signal ? { signal: input.signal } : {}),
    });
  } catch (error) {
    if (httpStatusOf(error) === 404) return { found: false };
    throw error;
  }
  // Some answers put the single record bare under the object's key instead of in an array.
  const value = (body as RawObject | null)?.[input.object];
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    return { found: true, items: [value as RawObject] };
  }
  return { found: true, items: listItems(body, input.object, `GET /v1 ${input.object} record`).items };
}
