/** The push endpoint's dependencies from a process's config and warehouse (what the worker's server passes). */
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log/logger.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import type { PushDeps } from './handle-push.ts';
import { pushOrgResolver } from './resolve-push-org.ts';

export function pushDepsFromConfig(input: {
  config: Config;
  warehouse: Warehouse;
  enqueue: PushDeps['enqueue'];
  log?: Logger;
}): PushDeps {
  return {
    secret: input.config.http.pushSecret,
    db: input.warehouse.db,
    enqueue: input.enqueue,
    resolveOrg: pushOrgResolver(input.config),
    path: input.config.http.pushPath,
    ...(input.log ? { log: input.log.child({ component: 'push' }) } : {}),
  };
}
