/**
 * The one configuration schema. Every setting has a default here or is required, and the comment
 * says what it does. The environment names of the README's table override the file (see load-config.ts).
 */
import { z } from 'zod';
import {
  DEFAULT_REQUESTS_PER_HOUR,
  LEGACY_OBJECTS,
  MAX_STREAM_CONNECTIONS,
  refinePathSegment,
  STREAM_RECORD_TYPES,
  toStreamRecordType,
  V2_RESOURCES,
} from '../validic/platform-limits.ts';
import { DEFAULT_STREAM_CONSUMER_OPTIONS as STREAM_DEFAULTS } from './stream-options.ts';

const baseUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** One entry of `stream.resources`, mapped to the record type the stream filter takes. */
const streamResource = z.string().transform((name, ctx) => {
  const type = toStreamRecordType(name);
  if (type === null) {
    ctx.addIssue({
      code: 'custom',
      message: `"${name}" is not a type the platform streams; use one or more of: ${STREAM_RECORD_TYPES.join(', ')} (REST path names such as measurements or summaries are mapped)`,
    });
    return z.NEVER;
  }
  return type;
});

/** An organization id: it goes into URL paths, so it must be one usable path segment (not `..`). */
const orgIdSchema = z.string().min(1, 'is empty').superRefine(refinePathSegment);

export const organizationSchema = z.object({
  /** The organization id (`VALIDIC_ORG_ID`). */
  orgId: orgIdSchema,
  /** The org token (`VALIDIC_TOKEN`); rides in URLs as `token=`, so it is redacted everywhere. */
  token: z.string().min(1, 'is empty'),
  /** v2 REST base (`VALIDIC_API_URL`). */
  apiUrl: baseUrl.default('https://api.v2.validic.com'),
  /** Streams and replay base (`VALIDIC_STREAMS_URL`). */
  streamsUrl: baseUrl.default('https://streams.v2.validic.com'),
  /** Legacy v1 base, paths under /v1 are appended (`VALIDIC_LEGACY_URL`). */
  legacyUrl: baseUrl.default('https://api.validic.com'),
  /** Legacy organization id (`VALIDIC_LEGACY_ORG_ID`), default: orgId. */
  legacyOrgId: orgIdSchema.optional(),
  /** Legacy access token (`VALIDIC_LEGACY_TOKEN`), default: token. */
  legacyToken: z.string().min(1).optional(),
  /** Requests per hour the token may make (`VALIDIC_REQUESTS_PER_HOUR`); the worker paces itself under it. */
  requestsPerHour: z.coerce.number().int().positive().default(DEFAULT_REQUESTS_PER_HOUR),
  /** v2 resource types polled by backfill and scheduled polling. */
  resources: z.array(z.enum(V2_RESOURCES)).default([...V2_RESOURCES]),
  stream: z
    .object({
      /** Name of the platform stream this org consumes; found by name or created. */
      name: z.string().min(1).default('validic-sync'),
      /**
       * Optional resource filter set when the stream is created: record types the platform streams
       * (measurement, nutrition, intraday, summary, workout, sleep, cgm, connection); the REST path
       * names (measurements, summaries, workouts, connections) are accepted and mapped. Default: all.
       */
      resources: z
        .array(streamResource)
        .transform((types) => [...new Set(types)])
        .optional(),
      /** Concurrent connections to the stream (the platform allows 3). */
      connections: z.coerce.number().int().min(1).max(MAX_STREAM_CONNECTIONS).default(1),
      /**
       * Keep a second stream for reconciliation (`VALIDIC_RECONCILE_STREAM`): its passes re-deliver
       * what the primary lost (src/stream/README.md). It counts toward the platform's 5 streams.
       */
      reconcile: z.union([z.boolean(), z.stringbool()]).default(true),
      /** Name of the reconciliation stream; default `<name>-reconcile`. */
      reconcileName: z.string().min(1).optional(),
    })
    .prefault({}),
  legacy: z
    .object({
      /** Whether the worker schedules legacy latest polling for this org. */
      enabled: z.boolean().default(false),
      objects: z
        .array(z.enum(LEGACY_OBJECTS))
        .default(['fitness', 'routine', 'nutrition', 'sleep', 'weight', 'diabetes', 'biometrics']),
      /** Sent as the `Service-Version` header when set (YYYY-MM-DD). */
      serviceVersion: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD')
        .optional(),
      /**
       * Delete checks (src/legacy/confirm-legacy-deletes.ts): stored records a complete `latest` window no
       * longer lists are asked for by id, one request each. At most this many per pass (one pass after
       * each window read); the rest wait, queued, for later passes. 0 turns the checks off.
       */
      deleteChecksPerPass: z.coerce.number().int().min(0).default(25),
      /**
       * The most delete checks may spend, as a share of the org's usable requests per hour (the legacy
       * token's budget), over any hour and across the fleet: 0.05 is 94 requests an hour at 2,000.
       * 0 turns the checks off.
       */
      deleteCheckShare: z.coerce.number().min(0).max(0.5).default(0.05),
    })
    .prefault({}),
  // --- push ---
  /**
   * Application secret the provider signs push notifications with (`VALIDIC_APPLICATION_SECRET`),
   * issued on request; with it, a push whose `X-Validic-Signature` verifies belongs to this org.
   * A secret like the tokens: redacted everywhere.
   */
  applicationSecret: z.string().min(1, 'is empty').optional(),
  // --- end push ---
});
export type OrganizationConfig = z.infer<typeof organizationSchema>;

export const configSchema = z.object({
  /** PostgreSQL URL (`DATABASE_URL`); without it an embedded PGlite warehouse in `dataDir` is used. */
  databaseUrl: z.string().min(1).optional(),
  /** Folder for the embedded warehouse (`VALIDIC_DATA_DIR`). */
  dataDir: z.string().min(1).default('.data'),
  /** Redis URL (`REDIS_URL`); without it one-shot commands run jobs inline and `worker` refuses to start. */
  redisUrl: z.string().min(1).optional(),
  /** Prefix of every Redis key (queues, budget, locks) (`VALIDIC_REDIS_PREFIX`). */
  redisPrefix: z.string().min(1).default('validic-sync'),
  /** Log level (`LOG_LEVEL`). */
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Allow plain-http base URLs on loopback hosts (`VALIDIC_ALLOW_INSECURE_LOOPBACK`). Off by default:
   * the token rides in every URL, so anything but https would expose it. The sandbox and tests turn it on.
   */
  allowInsecureLoopback: z.boolean().default(false),
  /**
   * Host names that may be reached over plain http (`VALIDIC_ALLOW_INSECURE_HOSTS`, comma-separated),
   * e.g. the sandbox service on a private compose network. Empty by default.
   */
  allowInsecureHosts: z.array(z.string().min(1)).default([]),
  http: z
    .object({
      /**
       * Port of the admin listener (`HTTP_PORT`): /healthz, /readyz, /metrics and /queues, behind the
       * admin token (`adminToken`), or for loopback clients only without one.
       */
      port: z.coerce.number().int().min(0).max(65535).default(3000),
      /** Interface the admin listener binds (`HTTP_HOST`); loopback unless set. */
      host: z.string().min(1).default('127.0.0.1'),
      /**
       * Port of the push listener (`PUSH_PORT`): it answers the push path only, everything else 404. It
       * runs only when push is configured (see `src/push/push-admission.ts`).
       */
      pushPort: z.coerce.number().int().min(0).max(65535).default(3001),
      /**
       * Interface the push listener binds (`PUSH_HOST`); loopback by default. The platform must reach it,
       * so deployers expose it deliberately, usually behind a TLS-terminating reverse proxy.
       */
      pushHost: z.string().min(1).default('127.0.0.1'),
      /** Shared secret guarding the push-notification endpoint (`PUSH_SECRET`); push is off without it. */
      pushSecret: z.string().min(16, 'must be at least 16 characters').optional(),
      /** Path of the push-notification endpoint (`PUSH_PATH`), POST only. */
      pushPath: z
        .string()
        .regex(/^\/\S*$/, 'must start with /')
        .default('/push/v1'),
      /**
       * Limits of both listeners (node:http's own defaults are too loose for a port facing the internet).
       * `requestTimeoutMs`: the whole request (headers and body) must arrive within it, else 408 and the
       * connection closes (slow bodies). `headersTimeoutMs`: the headers must (slow-loris; a sender's
       * headers come in one packet, so a few seconds is ample); capped at `requestTimeoutMs`.
       * `keepAliveTimeoutMs`: an idle kept-alive connection closes after it.
       */
      requestTimeoutMs: z.coerce.number().int().min(100).default(30_000),
      headersTimeoutMs: z.coerce.number().int().min(100).default(5_000),
      keepAliveTimeoutMs: z.coerce.number().int().min(100).default(5_000),
      /** Open connections per listener (`server.maxConnections`); more are closed on arrival. */
      maxConnections: z.coerce.number().int().min(1).default(256),
      /**
       * Open connections per client address and listener (an IPv6 client by its /64): more are closed on
       * arrival, so slow sockets from one address cannot fill `maxConnections`
       * (`HTTP_MAX_CONNECTIONS_PER_ADDRESS`). Behind a reverse proxy every connection comes from the
       * proxy: keep this above the proxy's concurrent and idle upstream connections (README, "Push
       * notifications").
       */
      maxConnectionsPerAddress: z.coerce.number().int().min(1).default(32),
      /** Largest request body on the push listener, bytes (413 above; chunked bodies counted too). */
      maxBodyBytes: z.coerce
        .number()
        .int()
        .min(1024)
        .default(1024 * 1024),
      /** Largest request body on the admin listener, bytes; its routes are GETs, so small. */
      adminMaxBodyBytes: z.coerce
        .number()
        .int()
        .min(0)
        .default(16 * 1024),
      /** Serve bull-board, the BullMQ dashboard, at /queues on the admin listener (`VALIDIC_DASHBOARD`). */
      dashboard: z.boolean().default(true),
      /** Let the dashboard retry, promote and clean jobs (`VALIDIC_DASHBOARD_WRITABLE`); read-only by default. */
      dashboardWritable: z.boolean().default(false),
      /**
       * Token the admin listener asks for (`VALIDIC_ADMIN_TOKEN`): `Authorization: Bearer <token>`, or Basic
       * auth with it as the password (browsers). Without it only loopback clients are served. /healthz is
       * always open.
       */
      adminToken: z.string().min(16, 'must be at least 16 characters').optional(),
      /**
       * Host names (or addresses) the admin listener answers to, beside the loopback names (`localhost`,
       * `127.0.0.1`, `::1`) and `host` when it is a specific address (`HTTP_ALLOWED_HOSTS`,
       * comma-separated): a request whose Host header names another (DNS rebinding) is refused (421).
       * Add the name Prometheus or a proxy uses to reach it.
       */
      allowedHosts: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
  sync: z
    .object({
      /** Days re-polled by scheduled polling to catch late data. */
      /**
       * The recent REST poll (`VALIDIC_RECENT_POLL`): 'fallback' (default) polls only while the org's
       * stream has been unheard for `budget.streamFallbackMinutes`, and then only the outage's days
       * (the stream carries freshness; src/budget/recent-poll.ts); 'always' re-polls the lookback
       * of every user on schedule whatever the stream does.
       */
      recentPoll: z.enum(['fallback', 'always']).default('fallback'),
      lookbackDays: z.coerce.number().int().min(0).max(30).default(3),
      /** Overlap between consecutive legacy `latest` windows, in minutes, so late syncs are caught. */
      legacyOverlapMinutes: z.coerce.number().int().min(0).default(10),
      /** Length of one legacy `latest` window, in hours. */
      legacyWindowHours: z.coerce.number().int().min(1).default(24),
      /**
       * Poll jobs run at once by one inline command (backfill); each fetches one user's window of every
       * resource, one request after another.
       */
      concurrency: z.coerce.number().int().min(1).max(64).default(4),
      /**
       * Days of history the worker backfills for a user that appears in the users listing after the
       * first complete one (`VALIDIC_NEW_USER_HISTORY_DAYS`; 0 = none): newest windows first, at the
       * backfill share of the budget. Users of the first listing get the history the operator asks for
       * with `backfill`.
       */
      newUserHistoryDays: z.coerce.number().int().min(0).max(3660).default(365),
    })
    .prefault({}),
  stream: z
    .preprocess(
      readRenamedStreamKeys,
      z.object({
        /** Drop and reconnect when no frame (not even a poke) arrives for this long (three missed 5 s pokes). */
        staleAfterMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.staleAfterMs),
        /** A disconnect longer than this is filled by replay (shorter ones resume from the stream's own checkpoint). */
        gapAfterMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.gapAfterMs),
        /** A replay that has not handed off after this long is given up; its gap goes to a REST backfill. */
        replayTimeoutMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.replayTimeoutMs),
        /** Micro-batch: commit after this many frames… */
        batchMaxFrames: z.coerce.number().int().positive().default(STREAM_DEFAULTS.microBatch.maxFrames),
        /** …or after this long, whichever comes first. */
        batchMaxWaitMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.microBatch.maxWaitMs),
        /** Connection hygiene: drop after this many pokes in a row without data (0 = off). */
        maxPokesWithoutData: z.coerce.number().int().min(0).default(0),
        /** Least wait before any reconnect, ms: the platform answers 422 while it rebalances after a disconnect. */
        reconnectMinMs: z.coerce.number().int().min(0).default(STREAM_DEFAULTS.backoff.minMs),
        /** Jitter span of the first reconnect, ms, added to `reconnectMinMs` (doubling per failed attempt). */
        backoffBaseMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.backoff.baseMs),
        /** Largest reconnect delay, ms; never more than `staleAfterMs` (larger values are clamped). */
        backoffCapMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.backoff.capMs),
        /**
         * First wait after a 429 on connect or replay, ms, doubling per 429 in a row (half of it jitter),
         * never below a `Retry-After`: the hour's request budget is spent, so retrying sooner only spends more.
         */
        rateLimitedBaseMs: z.coerce
          .number()
          .int()
          .positive()
          .default(STREAM_DEFAULTS.backoff.rateLimitedBaseMs),
        /** Largest wait after 429s in a row, ms. Independent of `staleAfterMs`. */
        rateLimitedCapMs: z.coerce
          .number()
          .int()
          .positive()
          .default(STREAM_DEFAULTS.backoff.rateLimitedCapMs),
        /** Pokes in a row, stamped at or after the hand-off time, that end a replay or a reconciliation pass. */
        quietPokes: z.coerce.number().int().min(1).default(STREAM_DEFAULTS.quietPokes),
        /** A reconciliation pass that has not caught up after this long commits what it read and ends. */
        passTimeoutMs: z.coerce.number().int().positive().default(STREAM_DEFAULTS.passTimeoutMs),
        /**
         * The worker runs a pass this long after a gap (an unclean end of a connection) rather than at the
         * next scheduled one: long enough for the primary to catch up after a reconnect, so the pass
         * finds what it lost rather than what it was about to deliver.
         */
        passAfterGapSeconds: z.coerce.number().int().min(0).default(60),
      }),
    )
    .prefault({}),
  worker: z
    .object({
      /** Jobs one `worker` process runs at once (`VALIDIC_WORKER_CONCURRENCY`). */
      concurrency: z.coerce.number().int().min(1).max(64).default(4),
      /**
       * Lock of a running job, renewed while it runs (`VALIDIC_WORKER_LOCK_MS`). A SIGKILLed process's
       * jobs are handed to another process after about this long (BullMQ's stalled-job check).
       */
      lockDurationMs: z.coerce.number().int().min(1000).default(30_000),
      /** How often a job may be recovered from a dead process before it is failed for good. */
      maxStalledCount: z.coerce.number().int().min(0).default(3),
      /** Run the org streams in this process, while it holds one of the fleet's stream slots (`VALIDIC_WORKER_STREAMS`). */
      streams: z.union([z.boolean(), z.stringbool()]).default(true),
      /** Stream slot lease in Redis; renewed every third of it, taken over by another process when it lapses. */
      streamSlotTtlMs: z.coerce.number().int().min(1000).default(15_000),
      /** Completed jobs kept in Redis for inspection (jobs with a deterministic id are removed at once). */
      keepCompleted: z.coerce.number().int().min(0).default(1000),
      /** Failed jobs kept in Redis (and for at most 7 days). */
      keepFailed: z.coerce.number().int().min(0).default(5000),
    })
    .prefault({}),
  /** Recurring work of `worker`, as BullMQ job schedulers shared by the fleet. 0 minutes turns one off. */
  schedules: z
    .object({
      /** All schedules on or off (`VALIDIC_SCHEDULES`); off leaves only queued work and streams. */
      enabled: z.union([z.boolean(), z.stringbool()]).default(true),
      /** users.sync: the user list of each org. */
      usersSyncMinutes: z.coerce.number().min(0).default(60),
      /**
       * records.recent: re-poll the last `sync.lookbackDays` days of every recently active user × resource
       * this often, while `sync.recentPoll` says so (by default only while the stream is down) (dormant users: `budget.dormantPollMinutes`). The budget planner stretches it when the
       * request budget cannot serve it; `status` shows the period achieved.
       */
      recentPollMinutes: z.coerce.number().min(0).default(60),
      /**
       * streams.reconcile: a pass of each org's reconciliation stream (re-delivers what the primary
       * stream lost; sooner after a gap, `stream.passAfterGapSeconds`). The platform keeps the stream's
       * checkpoint 7 days: keep this well below.
       */
      reconcileStreamMinutes: z.coerce.number().min(0).default(60),
      /** connections.reconcile over the last `reconcileDays` days: fills what the stream missed. */
      reconcileMinutes: z.coerce.number().min(0).default(1440),
      reconcileDays: z.coerce.number().int().min(1).max(30).default(30),
      /** legacy.latest for orgs with `legacy.enabled`. */
      legacyLatestMinutes: z.coerce.number().min(0).default(15),
      /** records.audit: a tick of the completeness audit, auditing `budget.auditShare` of the hour's requests. */
      auditMinutes: z.coerce.number().min(0).default(60),
    })
    .prefault({}),
  /**
   * How each org's request budget is divided (src/budget/plan-request-budget.ts): stream, push and
   * reconcile fetches, the recent poll, then backfill. Minutes may be fractional (accelerated tests).
   */
  budget: z
    .object({
      /** Share of the usable request rate backfill always keeps, so the recent poll cannot starve it. */
      backfillMinShare: z.coerce.number().min(0).max(0.9).default(0.1),
      /**
       * Requests reserved per stream connection and hour: connects after the platform's rebalancing
       * (422) and drops, and the replay that follows each. A fixed reservation: the stream's own
       * request count is small and bursty, so measuring it would mostly measure noise.
       */
      streamRequestsPerConnectionHour: z.coerce.number().min(0).default(12),
      /** A user with a record starting in the last this many days is active (polled every recentPollMinutes). */
      activeDays: z.coerce.number().int().min(1).default(7),
      /** How often a dormant user (no record in `activeDays`) is re-polled (0: as often as active users). */
      dormantPollMinutes: z.coerce.number().min(0).default(1440),
      /**
       * With `sync.recentPoll` 'fallback': the recent poll comes on once the org's primary stream has
       * been unheard this long (no connection live; a live one is heard at least once a minute).
       */
      streamFallbackMinutes: z.coerce.number().positive().default(15),
      /** How often the records.recent tick enqueues the next slice of users. */
      tickSeconds: z.coerce.number().positive().default(60),
      /**
       * Most of the usable request rate push-triggered fetches may take (src/push/README.md, "Push at
       * scale"); what pushes ask beyond it waits in the durable queue. Never more than what the stream,
       * the reconcile jobs and backfill's minimum leave.
       */
      pushMaxShare: z.coerce.number().min(0).max(0.9).default(0.4),
      /**
       * Share of the usable request rate the scheduled completeness audit spends (`VALIDIC_AUDIT_SHARE`),
       * from what the stream, push, reconcile and the recent poll leave above backfill's minimum; one
       * request per cell.
       */
      auditShare: z.coerce.number().min(0).max(0.5).default(0.05),
    })
    .prefault({}),
  // --- push ---
  /** Limits of the push-notification endpoint (see src/push/README.md). */
  push: z
    .object({
      /** Largest accepted age (either way) of a signed push's `X-Validic-Timestamp`, seconds (`PUSH_SIGNATURE_MAX_AGE_SECONDS`). */
      signatureMaxAgeSeconds: z.coerce.number().int().min(1).default(300),
      /**
       * Items of a notification stored per transaction (`PUSH_MAX_ITEMS`): a larger notification is
       * stored whole and processed in parts of this many, never refused for its item count.
       */
      maxItems: z.coerce.number().int().min(1).default(500),
      /**
       * Notifications accepted per organization per minute, fleet-wide: the cap that protects the
       * service; more → 429, and the minute is covered by a legacy latest pass (`PUSH_RATE_PER_MINUTE`).
       */
      ratePerMinute: z.coerce.number().int().min(1).default(1200),
      /**
       * Items arriving within one window of this many seconds are due together at its end; until its
       * fetch is claimed, the pending fetch of a (user, object, 28-day window) absorbs every new item
       * for it (`PUSH_COALESCE_SECONDS`; 0 = due at once).
       */
      coalesceSeconds: z.coerce.number().int().min(0).max(3600).default(10),
      /** Stored push bodies older than this are pruned (`PUSH_RETENTION_DAYS`). */
      retentionDays: z.coerce.number().int().min(1).default(30),
      /** How often the worker runs push.prune, minutes (0 = never). */
      pruneMinutes: z.coerce.number().int().min(0).default(1440),
    })
    .prefault({}),
  // --- end push ---
  /** Upkeep of the warehouse's monthly partitions (jobs/warehouse-maintain.ts, docs/warehouse.md). */
  warehouse: z
    .object({
      /**
       * Records whose start_time is older than this many whole months (before the first day of the
       * month that many months back, UTC) have `raw` emptied; their normalized columns, every view and
       * record_versions stay (`RAW_RETENTION_MONTHS`; 0 = keep raw for ever, the default).
       */
      rawRetentionMonths: z.coerce.number().int().min(0).default(0),
      /** Months after the current one whose partitions the worker creates ahead (`PARTITION_MONTHS_AHEAD`). */
      partitionMonthsAhead: z.coerce.number().int().min(1).max(24).default(2),
      /** How often the worker runs warehouse.maintain, minutes (0 = never). */
      maintainMinutes: z.coerce.number().int().min(0).default(1440),
    })
    .prefault({}),
  /** The completeness audit (src/audit/README.md): cells of the warehouse compared with the platform. */
  audit: z
    .object({
      /** How far back the scheduled audit reaches (`VALIDIC_AUDIT_LOOKBACK_DAYS`): its history windows. */
      lookbackDays: z.coerce.number().int().min(30).default(365),
      /** Share of a tick's cells taken from the recent window (the last 30 days); the rest from history. */
      recentShare: z.coerce.number().min(0).max(1).default(0.5),
      /** Days of scheduled cells the completeness estimate in `status` and `/metrics` is taken over. */
      estimateDays: z.coerce.number().min(1).default(7),
      /** Platform versions younger than this are left out of a cell: the stream may be delivering them. */
      settleMinutes: z.coerce.number().min(0).default(10),
      /** Cells per records.audit job (a command run is split into jobs of this many). */
      cellsPerJob: z.coerce.number().int().min(1).default(25),
    })
    .prefault({}),
  /** The organizations to sync. Environment variables describe (and override) the first one. */
  organizations: z.array(organizationSchema).default([]),
});
export type Config = z.infer<typeof configSchema>;

/**
 * The back-off keys take the names of the formula they feed (`baseMs`, `capMs`, as in
 * src/time/backoff-delay.ts). A config file written with their earlier names (`backoffInitialMs`,
 * `backoffMaxMs`, `rateLimitedInitialMs`, `rateLimitedMaxMs`) still means the same: each is read as its
 * new name unless that one is given too.
 */
const RENAMED_STREAM_KEYS: Record<string, string> = {
  backoffInitialMs: 'backoffBaseMs',
  backoffMaxMs: 'backoffCapMs',
  rateLimitedInitialMs: 'rateLimitedBaseMs',
  rateLimitedMaxMs: 'rateLimitedCapMs',
};

function readRenamedStreamKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [earlier, current] of Object.entries(RENAMED_STREAM_KEYS)) {
    if (earlier in out) {
      if (!(current in out)) out[current] = out[earlier];
      delete out[earlier];
    }
  }
  return out;
}
