/**
 * The push endpoint's dependencies from a process's config and warehouse: the one place they are
 * assembled (the worker's push listener, start-worker.ts).
 */
import type { Config } from '../config/schema.ts';
import { legacyWindowSettings } from '../legacy/legacy-windows.ts';
import type { Logger } from '../log/logger.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import type { PushDeps, RefusalRecovery } from './handle-push.ts';
import type { SigningOrg } from './push-admission.ts';
import {
  createPushRateLimit,
  createPushRefusalCounter,
  createPushReplayCache,
  pushOrgResolver,
  type RateRedis,
  type ReplayRedis,
} from './push-admission.ts';

/** Organizations that can sign a push: those with an application secret (token: the v1 access token). */
export function signingOrgsOf(config: Pick<Config, 'organizations'>): SigningOrg[] {
  return config.organizations.flatMap((org) =>
    org.applicationSecret
      ? [
          {
            orgId: org.orgId,
            applicationSecret: org.applicationSecret,
            accessToken: org.legacyToken ?? org.token,
          },
        ]
      : [],
  );
}

/** The legacy `latest` margin of push: the legacy overlap, at least a minute. */
export function pushUpdatedMarginMs(config: Config): number {
  return Math.max(legacyWindowSettings(config).overlapMs, 60_000);
}

/**
 * What a refusal counted against `key` may have lost: the org it names (or, for the shared-secret key,
 * every org), with the legacy objects to read again; none for an org whose legacy.sync reads its latest
 * windows anyway (legacy.enabled).
 */
export function refusalRecoveryOf(config: Pick<Config, 'organizations'>): (key: string) => RefusalRecovery[] {
  return (key) =>
    config.organizations
      .filter((org) => org.orgId === key || !config.organizations.some((o) => o.orgId === key))
      .filter((org) => !org.legacy.enabled)
      .map((org) => ({ orgId: org.orgId, objects: org.legacy.objects }));
}

export function pushDepsFromConfig(input: {
  config: Config;
  warehouse: Warehouse;
  enqueue: PushDeps['enqueue'];
  /**
   * The worker's Redis: the per-minute rate, the refusal counts and the signatures already used are
   * then shared by the fleet (without it, by this process only).
   */
  redis?: RateRedis & ReplayRedis;
  log?: Logger;
  /**
   * "Now" of push admission (the signature's age, the minutes): the platform's clock when the worker
   * has one; default the process clock.
   */
  now?: () => number;
}): PushDeps {
  const { config } = input;
  const shared = {
    ...(input.redis ? { redis: input.redis, prefix: config.redisPrefix } : {}),
    ...(input.now ? { now: input.now } : {}),
  };
  return {
    secret: config.http.pushSecret,
    signingOrgs: signingOrgsOf(config),
    signatureMaxAgeMs: config.push.signatureMaxAgeSeconds * 1000,
    db: input.warehouse.db,
    enqueue: input.enqueue,
    resolveOrg: pushOrgResolver(config),
    path: config.http.pushPath,
    maxItems: config.push.maxItems,
    rateLimit: createPushRateLimit({ perMinute: config.push.ratePerMinute, ...shared }),
    replayCache: createPushReplayCache(shared),
    refusals: createPushRefusalCounter(shared),
    coalesceMs: config.push.coalesceSeconds * 1000,
    updatedMarginMs: pushUpdatedMarginMs(config),
    refusalRecovery: refusalRecoveryOf(config),
    // The handler's own limit agrees with the push listener's (which also counts chunked bodies).
    maxBodyBytes: config.http.maxBodyBytes,
    ...(input.now ? { now: input.now } : {}),
    ...(input.log ? { log: input.log.child({ component: 'push' }) } : {}),
  };
}
