/**
 * What a job may use of one configured organization (`ctx.org(orgId)`): its platform clients, the reads
 * that need the org's credentials, and the two org settings jobs read. Not the org's config (tokens,
 * URLs, secrets), not its raw HTTP client.
 */
import type { OrganizationConfig } from '../config/schema.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import {
  type ConfirmLegacyDeletesInput,
  type ConfirmLegacyDeletesResult,
  confirmLegacyDeletes,
} from '../legacy/confirm-legacy-deletes.ts';
import { findLegacyRecord, type GetLegacyRecordInput } from '../legacy/get-legacy-record.ts';
import type { LegacyClient } from '../legacy/legacy-client.ts';
import type { Logger } from '../log/logger.ts';
import type { StreamConsumerOptionsInput } from '../stream/consumer-options.ts';
import { type ReconcilePassSummary, runReconcilePass } from '../stream/reconciliation.ts';
import type { StreamsClient } from '../validic/streams-client.ts';
import type { V2Client } from '../validic/v2-client.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import type { PassTrigger } from '../warehouse/stream-bookkeeping.ts';

export interface JobOrg {
  v2: V2Client;
  legacy: LegacyClient;
  /** `organizations[].resources`: what records.backfill and records.recent fetch by default. */
  resources: OrganizationConfig['resources'];
  /** `organizations[].legacy.objects`: what legacy.sync plans by default. */
  legacyObjects: OrganizationConfig['legacy']['objects'];
  /** One legacy record by id; `found: false` when the platform answers 404. */
  findLegacyRecord(input: GetLegacyRecordInput): ReturnType<typeof findLegacyRecord>;
  /** Stored legacy records of a completely read window that it no longer listed: asked for by id, 404 marks them deleted. */
  confirmLegacyDeletes(
    input: Omit<ConfirmLegacyDeletesInput, 'warehouse' | 'org' | 'orgId'>,
  ): Promise<ConfirmLegacyDeletesResult>;
  /**
   * One pass of the org's reconciliation stream (src/stream/reconciliation.ts): reads what it
   * re-delivers until caught up, loads it, and reports what the primary stream had missed.
   */
  reconcileStream(input: {
    trigger: PassTrigger;
    signal: AbortSignal;
    log: Logger;
  }): Promise<ReconcilePassSummary>;
}

export function jobOrg(
  clients: {
    config: OrganizationConfig;
    http: HttpClient;
    streams: StreamsClient;
    v2: V2Client;
    legacy: LegacyClient;
  },
  warehouse: Warehouse,
  consumerOptions: StreamConsumerOptionsInput = {},
): JobOrg {
  const { config } = clients;
  return {
    v2: clients.v2,
    legacy: clients.legacy,
    resources: config.resources,
    legacyObjects: config.legacy.objects,
    findLegacyRecord: (input) => findLegacyRecord(clients, input),
    confirmLegacyDeletes: (input) =>
      confirmLegacyDeletes({ ...input, warehouse, org: clients, orgId: config.orgId }),
    reconcileStream: ({ trigger, signal, log }) =>
      runReconcilePass({ warehouse, org: clients, signal, trigger, consumerOptions, log }),
  };
}
