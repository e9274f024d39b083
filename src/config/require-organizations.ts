/**
 * Commands that talk to the platform need at least one organization; the file may list none (a
 * warehouse-only `migrate` or `status` needs no credentials), so the check lives here, per command.
 */
import { ConfigError, UsageError } from '../errors/index.ts';
import type { Config, OrganizationConfig } from './schema.ts';

export function requireOrganizations(config: Config): OrganizationConfig[] {
  if (config.organizations.length > 0) return config.organizations;
  throw new ConfigError([
    {
      key: 'VALIDIC_ORG_ID, VALIDIC_TOKEN',
      message: 'no organization is configured',
      fix: 'set VALIDIC_ORG_ID and VALIDIC_TOKEN (or list organizations in the config file); to try the tool without credentials run `validic-sync demo`',
    },
  ]);
}

/** The organizations a command's `--org <id>` names: that one, or every configured one without it. */
export function selectOrganizations(config: Config, orgId: string | undefined): OrganizationConfig[] {
  const orgs = requireOrganizations(config).filter((o) => !orgId || o.orgId === orgId);
  if (orgs.length === 0) {
    throw new UsageError(
      `organization ${orgId} is not configured`,
      `use one of: ${config.organizations.map((o) => o.orgId).join(', ')}`,
    );
  }
  return orgs;
}
