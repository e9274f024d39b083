/**
 * Typed client of the streams API (`{streamsUrl}/streams...`) and the replay URL. Connecting itself is
 * the SSE consumer's job: `connectUrl` / `replayUrl` give it the URLs to pass to
 * `http.openEventStream(url, { budgetKey: token })`.
 */
import {
  classifyFailure,
  httpStatusOf,
  PermanentHttpError,
  UnexpectedResponseError,
  UserFacingError,
} from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import { MAX_STREAMS_PER_CUSTOMER, pathSegmentProblem } from './platform-limits.ts';
import {
  buildUrl,
  classifyStream422,
  describeStream422,
  listItems,
  parseEnvelope,
  type RawObject,
  rawObject,
  type Stream422Reason,
} from './requests.ts';

const LIMIT_WORDS = /limit|maximum|max\b|exceed|too many/i;

export interface StreamInfo extends RawObject {
  id: string;
  name: string;
}

export interface CreateStreamParams {
  name: string;
  /** YYYY-MM-DD: deliver data from this date on. */
  start_date?: string;
  /** Record types, e.g. ['measurement', 'nutrition']. */
  resource_filter?: string[];
  event_type_filter?: string[];
}

export interface StreamsClientOptions {
  http: HttpClient;
  /** e.g. https://streams.v2.validic.com (a path prefix is kept). */
  streamsUrl: string;
  token: string;
}

export interface StreamsClient {
  listStreams(options?: { signal?: AbortSignal }): Promise<StreamInfo[]>;
  createStream(params: CreateStreamParams, options?: { signal?: AbortSignal }): Promise<StreamInfo>;
  getStream(id: string, options?: { signal?: AbortSignal }): Promise<StreamInfo>;
  renameStream(id: string, name: string, options?: { signal?: AbortSignal }): Promise<StreamInfo>;
  deleteStream(id: string, options?: { signal?: AbortSignal }): Promise<void>;
  /** The stream named `name` (first match), created with `resources` as its filter when missing. */
  findOrCreateStream(params: {
    name: string;
    resources?: string[];
    startDate?: string;
    signal?: AbortSignal;
  }): Promise<StreamInfo>;
  /** SSE URL of a stream (carries the token: never log it unredacted). */
  connectUrl(id: string): URL;
  /** SSE replay URL from `date` (YYYY-MM-DD), optionally for some record types only. */
  replayUrl(params: { date: string; resources?: string[] }): URL;
}

export function createStreamsClient(options: StreamsClientOptions): StreamsClient {
  const { http, streamsUrl, token } = options;
  const url = (segments: string[], query: Record<string, string | undefined> = {}) =>
    buildUrl(streamsUrl, segments, { ...query, token });
  const req = { budgetKey: token };

  const listStreams = async ({ signal }: { signal?: AbortSignal } = {}): Promise<StreamInfo[]> => {
    const body = await http.getJson<unknown>(url(['streams']), { ...req, signal });
    // A listed stream with an unusable id is left out: it cannot be addressed, and the others can.
    return listItems(body, 'streams', 'GET /streams').items.flatMap((s) => {
      try {
        return [toStream(s, 'GET /streams')];
      } catch (error) {
        if (error instanceof UnexpectedResponseError && hasId(s)) return [];
        throw error;
      }
    });
  };

  const createStream = async (params: CreateStreamParams, { signal }: { signal?: AbortSignal } = {}) => {
    try {
      const body = await http.sendJson<unknown>('POST', url(['streams']), params, { ...req, signal });
      return toStream(unwrap(body), 'POST /streams');
    } catch (err) {
      if (err instanceof PermanentHttpError) {
        const reason = await whyRefused(err, signal);
        if (reason !== null) {
          const { message, fix } = describeStream422(
            {
              operation: 'create',
              streamName: params.name,
              messages: err.messages,
              maxStreams: MAX_STREAMS_PER_CUSTOMER,
            },
            reason,
          );
          throw new UserFacingError(message, { fix, cause: err });
        }
      }
      throw err;
    }
  };

  /**
   * Why a create was refused, by the body first (requests.ts). A refusal whose body names
   * no reason (a 422/409, or another 4xx speaking of a limit: "too many") is the stream limit only when
   * the count of streams confirms it; a 422/409 otherwise is reported with the platform's own words.
   * null: not a refusal this explains (401/403, other 4xx): the error goes up as it is.
   */
  const whyRefused = async (
    err: PermanentHttpError,
    signal: AbortSignal | undefined,
  ): Promise<Stream422Reason | null> => {
    if (err.status === 401 || err.status === 403) return null;
    const reason = classifyStream422(err.messages);
    if (reason !== 'other') return reason;
    const unprocessable = err.status === 422 || err.status === 409;
    if (!unprocessable && !err.messages.some((m) => LIMIT_WORDS.test(m))) return null;
    try {
      if ((await listStreams({ signal })).length >= MAX_STREAMS_PER_CUSTOMER) return 'stream_limit';
    } catch {
      // Cannot count: report what the body says.
    }
    return unprocessable ? 'other' : null;
  };

  return {
    listStreams,
    createStream,
    async getStream(id, { signal } = {}) {
      const body = await http.getJson<unknown>(url(['streams', id]), { ...req, signal });
      return toStream(unwrap(body), 'GET /streams/{id}');
    },
    async renameStream(id, name, { signal } = {}) {
      const body = await http.sendJson<unknown>('PUT', url(['streams', id]), { name }, { ...req, signal });
      // Some servers answer a rename with no body: report the new name anyway.
      if (body === undefined) return { id, name };
      return toStream(unwrap(body), 'PUT /streams/{id}');
    },
    async deleteStream(id, { signal } = {}) {
      try {
        await http.sendJson<unknown>('DELETE', url(['streams', id]), undefined, { ...req, signal });
      } catch (err) {
        // Deleting what is already gone is done (a retried DELETE may see its own success as 404).
        if (httpStatusOf(err) === 404) return;
        throw err;
      }
    },
    async findOrCreateStream({ name, resources, startDate, signal }) {
      const existing = (await listStreams({ signal })).find((s) => s.name === name);
      if (existing) return existing;
      const params: CreateStreamParams = { name };
      if (resources && resources.length > 0) params.resource_filter = resources;
      if (startDate) params.start_date = startDate;
      try {
        return await createStream(params, { signal });
      } catch (err) {
        // A POST whose answer was lost (cut body, 5xx after acting) is not repeated by the HTTP layer;
        // the stream may exist now, so look again before giving up.
        const { kind } = classifyFailure(err);
        if (kind === 'permanent' || kind === 'unknown') throw err;
        const created = (await listStreams({ signal })).find((s) => s.name === name);
        if (created) return created;
        throw err;
      }
    },
    connectUrl(id) {
      return url(['streams', id, 'connect']);
    },
    replayUrl({ date, resources }) {
      return url(['replay'], {
        date,
        resources: resources && resources.length > 0 ? resources.join(',') : undefined,
      });
    },
  };
}

/** Single objects come bare; tolerate `{ stream: {...} }` and `{ data: {...} }`. */
function unwrap(body: unknown): RawObject {
  const obj = parseEnvelope(rawObject, body, 'streams API');
  for (const key of ['stream', 'data']) {
    const inner = obj[key];
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) return inner as RawObject;
  }
  return obj;
}

function hasId(obj: RawObject): boolean {
  return typeof (obj.id ?? obj._id) === 'string' || typeof (obj.id ?? obj._id) === 'number';
}

function toStream(obj: RawObject, what: string): StreamInfo {
  const id = obj.id ?? obj._id;
  if (typeof id !== 'string' && typeof id !== 'number') {
    throw new UnexpectedResponseError(what, 'a stream without an id');
  }
  // The id goes into /streams/{id}/connect: one like `..` would address another endpoint.
  const problem = pathSegmentProblem(String(id));
  if (problem)
    throw new UnexpectedResponseError(what, `a stream id that cannot be used in a URL path (it ${problem})`);
  return { ...obj, id: String(id), name: typeof obj.name === 'string' ? obj.name : '' };
}
