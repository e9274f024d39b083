/**
 * What a job may touch (CONVENTIONS.md): `{ log, warehouse, org(), signal, attempt, jobId, enqueue }`.
 * A job never talks HTTP or SQL directly: it composes the org's platform clients, normalization (inside
 * the loader) and `applyBatch`.
 */
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log/logger.ts';
import type { OrgClients } from '../runtime/org-clients.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';

export interface JobContext {
  /** pino child bound to the job id. */
  log: Logger;
  warehouse: Warehouse;
  /** The platform clients of a configured organization; throws a ConfigError for an unknown org. */
  org(orgId: string): OrgClients;
  /** Aborted when the process is asked to stop: pass it to every request and check it between batches. */
  signal: AbortSignal;
  /** 1 for the first attempt. */
  attempt: number;
  jobId: string;
  /**
   * Queue another job (validated against its schema); false when its deterministic id was queued already.
   * `priority` overrides the one inherited from this job (BullMQ; the inline runner has no priorities).
   */
  enqueue(name: string, payload: unknown, options?: { priority?: number }): Promise<boolean>;
  config: Config;
}
