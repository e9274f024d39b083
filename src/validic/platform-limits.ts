/**
 * The platform's documented numbers, in one place (PLATFORM-FACTS.md and the v2 spec). Code that plans
 * windows, connections, replays or the request budget takes them from here, never as a bare literal.
 */

/**
 * Record and connection queries: at most this many days from `start_date` to `end_date`, both inclusive
 * (the spec says 30, one provider guide 31: 30 is the safe reading). More gives a 400 with little detail.
 */
export const MAX_REQUEST_WINDOW_DAYS = 30;

/** Streams per customer; creating a sixth is refused (422). */
export const MAX_STREAMS_PER_CUSTOMER = 5;

/** Concurrent SSE connections to one stream; a 4th is refused (422). */
export const MAX_STREAM_CONNECTIONS = 3;

/** How long the platform keeps a stream's checkpoint after a disconnect: reconnecting within it resumes. */
export const STREAM_CHECKPOINT_RETENTION_DAYS = 7;

/** How far back `GET /replay` serves (`date` at most this many days ago). */
export const REPLAY_RETENTION_DAYS = 30;

/** The platform keeps events (connection events, replay) captured on or after this date only. */
export const CONNECTION_EVENTS_SINCE = '2025-07-01';

/** The documented default request rate per token; a contract may grant another (`requestsPerHour`). */
export const DEFAULT_REQUESTS_PER_HOUR = 2_000;

/** An open stream connection gets a `poke` frame this often when nothing else flows. */
export const STREAM_POKE_INTERVAL_MS = 5_000;
