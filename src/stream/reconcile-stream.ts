/**
 * The reconciliation stream: a second main stream of the organization with the same resource filter as
 * the primary (PLATFORM-FACTS.md, "Reconciliation at high volume"). It is connected for a pass now and
 * then (run-reconcile-pass.ts) and resumes, within 7 days, where its last pass left off: each pass
 * re-delivers everything created since, so what the primary lost arrives again.
 */

import type { OrganizationConfig } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import type { StreamInfo, StreamsClient } from '../validic/streams-client.ts';

/**
 * How far a gap's platform time may be off: before a connection's first poke it is estimated from the
 * `Date` header, which carries whole seconds. A gap that starts within this of where the reconciliation
 * stream's reach begins is taken as inside it.
 */
export const CLOCK_ESTIMATE_TOLERANCE_MS = 2_000;

/** The reconciliation stream's name: `stream.reconcileName`, default `<stream name>-reconcile`. */
export function reconcileStreamName(settings: { name: string; reconcileName?: string | undefined }): string {
  return settings.reconcileName ?? `${settings.name}-reconcile`;
}

/** The stream's `created_at` as an ISO time (platform clock), when the platform gave one. */
export function streamCreatedAt(stream: StreamInfo): string | undefined {
  const value = stream.created_at;
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

export type ReconcileStreamLookup =
  | { ok: true; stream: StreamInfo; name: string }
  | { ok: false; name: string; why: string; fix: string };

/**
 * Finds the org's reconciliation stream by name, or creates it (it counts toward the platform's 5 streams
 * per customer). A refusal (the limit, a bad filter) is an answer, not an error: the primary stream goes
 * on without reconciliation, and `status` says why.
 */
export async function findReconcileStream(
  org: { config: OrganizationConfig; streams: StreamsClient },
  signal: AbortSignal,
  log: Pick<Logger, 'warn'>,
): Promise<ReconcileStreamLookup> {
  const settings = org.config.stream;
  const name = reconcileStreamName(settings);
  const resources = settings.resources && settings.resources.length > 0 ? settings.resources : undefined;
  try {
    const stream = await org.streams.findOrCreateStream({
      name,
      ...(resources ? { resources } : {}),
      signal,
    });
    return { ok: true, stream, name };
  } catch (error) {
    if (!(error instanceof UserFacingError)) throw error;
    const result = {
      ok: false as const,
      name,
      why: redactedMessage(error),
      fix:
        error.fix ??
        'free one of the 5 streams the platform allows per customer, or set stream.reconcile to false',
    };
    log.warn(
      { reconcileStream: name, fix: result.fix },
      `reconciliation stream unavailable: ${result.why}; the primary stream runs without it, and events it loses are not re-delivered`,
    );
    return result;
  }
}
