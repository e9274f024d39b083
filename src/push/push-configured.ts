/**
 * Whether push is configured, i.e. whether the worker opens its push listener at all: the one place that
 * decides it, so a new way to authenticate push requests (e.g. an application secret for signatures)
 * only has to be added here. Without any, no port is opened: an endpoint that would answer nothing but
 * 404 has no reason to face the internet.
 */
import type { Config } from '../config/schema.ts';

export function pushConfigured(config: Pick<Config, 'http' | 'organizations'>): boolean {
  return (
    Boolean(config.http.pushSecret) || config.organizations.some((org) => Boolean(org.applicationSecret))
  );
}
