/**
 * Which configured organization a push item belongs to: the one whose legacy org id (or org id) the
 * item names; with no org named, the only configured organization. Undefined when it cannot be told.
 */
import type { Config } from '../config/schema.ts';

export type ResolvePushOrg = (organizationId: string | undefined) => string | undefined;

export function pushOrgResolver(config: {
  organizations: readonly Pick<Config['organizations'][number], 'orgId' | 'legacyOrgId'>[];
}): ResolvePushOrg {
  const byId = new Map<string, string>();
  for (const org of config.organizations) byId.set(org.orgId, org.orgId);
  // The legacy id wins over a v2 id of another org: push notifications come from the v1 platform.
  for (const org of config.organizations) byId.set(org.legacyOrgId ?? org.orgId, org.orgId);
  const only = config.organizations.length === 1 ? config.organizations[0]!.orgId : undefined;
  return (organizationId) => (organizationId ? byId.get(organizationId) : only);
}
