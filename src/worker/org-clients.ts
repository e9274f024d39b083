/**
 * The platform clients of one organization, sharing one HTTP client whose budget is that org's token
 * bucket (in Redis when the process has Redis, so a fleet shares it).
 */

import type { RedisEvalClient } from '../budget/request-budget.ts';
import { budgetKeyOf, createRequestBudget } from '../budget/request-budget.ts';
import type { OrganizationConfig } from '../config/schema.ts';
import { createHttpClient } from '../http/http-client.ts';
import type { HttpClient, RequestBudget, RequestEvent } from '../http/http-client-types.ts';
import { createLegacyClient, type LegacyClient } from '../legacy/legacy-client.ts';
import type { Logger } from '../log/logger.ts';
import { createStreamsClient, type StreamsClient } from '../validic/streams-client.ts';
import { createV2Client, type V2Client } from '../validic/v2-client.ts';

export interface OrgClients {
  config: OrganizationConfig;
  http: HttpClient;
  budget: RequestBudget;
  legacyBudget: RequestBudget;
  v2: V2Client;
  streams: StreamsClient;
  legacy: LegacyClient;
  close(): Promise<void>;
}

export interface OrgClientsOptions {
  log: Logger;
  redis?: RedisEvalClient | undefined;
  redisPrefix: string;
  onRequest?: (event: RequestEvent) => void;
}

export function createOrgClients(org: OrganizationConfig, options: OrgClientsOptions): OrgClients {
  const rate = { limit: org.requestsPerHour };
  const keyPrefix = `${options.redisPrefix}:budget:`;
  const budget = createRequestBudget({ rate, redis: options.redis, keyPrefix, key: budgetKeyOf(org.token) });
  const legacyToken = org.legacyToken ?? org.token;
  // The legacy token has its own limit on the platform; when it is the same token it shares the bucket.
  const legacyBudget =
    legacyToken === org.token
      ? budget
      : createRequestBudget({ rate, redis: options.redis, keyPrefix, key: budgetKeyOf(legacyToken) });
  const http = createHttpClient({
    logger: options.log,
    budgets: { forKey: (key) => (key === legacyToken ? legacyBudget : budget) },
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
  });
  return {
    config: org,
    http,
    budget,
    legacyBudget,
    v2: createV2Client({ http, apiUrl: org.apiUrl, orgId: org.orgId, token: org.token }),
    streams: createStreamsClient({ http, streamsUrl: org.streamsUrl, token: org.token }),
    legacy: createLegacyClient({
      http,
      legacyUrl: org.legacyUrl,
      orgId: org.legacyOrgId ?? org.orgId,
      accessToken: legacyToken,
      ...(org.legacy.serviceVersion ? { serviceVersion: org.legacy.serviceVersion } : {}),
    }),
    close: () => http.close(),
  };
}
