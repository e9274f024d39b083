/**
 * The sandbox: a simulated health-data platform (v2 REST, streams + replay, legacy v1) on one loopback
 * port, with seeded data, ground truth and switchable faults. See README.md next to this file.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createControl, type SandboxControl, type SandboxTruth } from './control.ts';
import type { SandboxCore } from './core.ts';
import type { CoreBase } from './core-base.ts';
import { FaultSwitches, type Faults, RequestBudget } from './faults.ts';
import { DEFAULT_MIX, generateData } from './generate-data.ts';
import { LiveFeed } from './live-feed.ts';
import { Notifier } from './notifier.ts';
import { createPrng } from './prng.ts';
import { createRequestHandler, PREFIXES } from './server.ts';
import { SandboxState } from './state.ts';
import { RequestStats } from './stats.ts';
import { StreamHub } from './stream-hub.ts';
import { createClock, DAY_MS, startOfUtcDay } from './time.ts';
import type { ResourceType } from './types.ts';

export type { SandboxControl, SandboxTruth } from './control.ts';
export type { Faults } from './faults.ts';
export { DEFAULT_FAULTS } from './faults.ts';
export type * from './types.ts';

export interface SandboxOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** Seed of every generated value and fault decision (default 1). */
  seed?: number;
  /** Generated users (default 10). */
  users?: number;
  /** Generated days ending today (default 30). */
  days?: number;
  /** Clock anchor: "now" for the generated data and the sandbox clock (default: real now). */
  now?: Date;
  /** Poke interval of idle stream and replay connections (default 5000 ms). */
  pokeIntervalMs?: number;
  orgId?: string;
  token?: string;
  /** Legacy org and token default to `orgId` and `token`. */
  legacyOrgId?: string;
  legacyToken?: string;
  /** Application secret push notifications are signed with (default: seeded). */
  applicationSecret?: string;
  /** The platform's rate limit per token and hour; null (default) for none. */
  requestsPerHour?: number | null;
  faults?: Partial<Faults>;
  /** Expected records per user per day for each resource type. */
  mix?: Partial<Record<ResourceType, number>>;
  /** Intraday point spacing (default 15 minutes). */
  intradayIntervalMinutes?: number;
  /**
   * Events re-sent after a stream reconnect (default 0: the platform promises redelivery but no number, and
   * a test that leaned on a few re-sent events would hide a loss; a test turns it on to try the other case).
   */
  redeliverCount?: number;
  /**
   * Which date of a record the v2 `start_date`/`end_date` filter matches (the spec does not pin it
   * down): `utc`, the UTC date of start_time (default), or `local`, the user's local date of it.
   */
  windowBy?: 'utc' | 'local';
  /**
   * Where a new stream created without `start_date` begins (the spec does not say): `creation`, at the end
   * of the event log, only what is created from then on (default); or `start-of-day`, at the first event
   * created on the UTC day of its creation, as if `start_date` were that day.
   */
  newStreamStart?: 'creation' | 'start-of-day';
}

export interface Sandbox {
  port: number;
  apiUrl: string;
  streamsUrl: string;
  legacyUrl: string;
  controlUrl: string;
  orgId: string;
  token: string;
  legacyOrgId: string;
  legacyToken: string;
  /** The application secret signing push notifications (with `legacyToken`). */
  applicationSecret: string;
  /** A valid token of another organization (for the 401 path). */
  otherOrgId: string;
  otherToken: string;
  truth: SandboxTruth;
  control: SandboxControl;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const seed = options.seed ?? 1;
  const host = options.host ?? '127.0.0.1';
  const anchor = options.now?.getTime() ?? Date.now();
  const idPrng = createPrng(seed ^ 0x7a11);
  const orgId = options.orgId ?? 'sandbox-org';
  const token = options.token ?? `sbx_${idPrng.hexId()}`;
  const state = new SandboxState(
    { orgId, token },
    { orgId: `${orgId}-other`, token: `sbx_other_${idPrng.hexId()}` },
    { orgId: options.legacyOrgId ?? orgId, token: options.legacyToken ?? token },
  );
  const days = options.days ?? 30;
  const applicationSecret = options.applicationSecret ?? `sbx_app_${idPrng.hexId()}`;

  const server = createServer({ keepAliveTimeout: 30_000 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const root = `http://${host}:${port}`;
  const apiUrl = `${root}${PREFIXES.api}`;

  const base: CoreBase = {
    state,
    clock: createClock(anchor),
    faults: new FaultSwitches(seed, options.faults),
    rateLimit: new RequestBudget(
      options.requestsPerHour ? { limit: options.requestsPerHour, windowMs: 3_600_000 } : null,
    ),
    stats: new RequestStats(),
    prng: createPrng(seed ^ 0xc0de),
    notifier: new Notifier({ applicationSecret, accessToken: state.legacyOrg.token }),
    settings: {
      pokeIntervalMs: options.pokeIntervalMs ?? 5000,
      intradayIntervalMinutes: options.intradayIntervalMinutes ?? 15,
      redeliverCount: options.redeliverCount ?? 0,
      windowBy: options.windowBy ?? 'utc',
      newStreamStart: options.newStreamStart ?? 'creation',
      checkpointRetentionMs: 7 * DAY_MS,
      eventsAvailableFromMs: Date.parse('2025-07-01T00:00:00Z'),
      renameDayMs: startOfUtcDay(anchor) - (days - 1) * DAY_MS + Math.floor(days / 2) * DAY_MS,
    },
    offsets: new Map(),
    apiUrl,
  };
  const core: SandboxCore = Object.assign(base, { streams: new StreamHub(base) });
  const mix = { ...DEFAULT_MIX, ...options.mix };
  const { built } = generateData(state, {
    seed,
    users: options.users ?? 10,
    days,
    nowMs: anchor,
    mix,
    intradayIntervalMinutes: core.settings.intradayIntervalMinutes,
    baseUrl: apiUrl,
    deleteKeepsChecksum: core.faults.current.deleteKeepsChecksum,
  });
  for (const b of built) core.offsets.set(b.user.uid, b.utcOffset);
  state.onEvent(() => core.streams.onEvent());

  const feed = new LiveFeed(core, seed, mix);
  const { control, truth } = createControl(core, feed);
  const handle = createRequestHandler(core, control, truth);
  server.on('request', (req, res) => {
    // The `Date` header tells the sandbox's clock, as the platform's tells its own (not the host's).
    res.sendDate = false;
    res.setHeader('Date', new Date(core.clock.now()).toUTCString());
    return handle(req, res);
  });

  return {
    port,
    apiUrl,
    streamsUrl: `${root}${PREFIXES.streams}`,
    legacyUrl: `${root}${PREFIXES.legacy}`,
    controlUrl: `${root}${PREFIXES.control}`,
    orgId,
    token,
    legacyOrgId: state.legacyOrg.orgId,
    legacyToken: state.legacyOrg.token,
    applicationSecret,
    otherOrgId: state.otherOrg.orgId,
    otherToken: state.otherOrg.token,
    truth,
    control,
    close: async () => {
      feed.stop();
      core.streams.closeAll();
      await core.notifier.flush();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
