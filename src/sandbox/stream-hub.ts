/**
 * Streams: definitions, server-side checkpoints, and distribution of the event log to connected members.
 *
 * - Each stream has a cursor into the org's event log (its checkpoint). Events are only consumed while a
 *   member is connected; with several members they are dealt round-robin (consumer-group style).
 * - The checkpoint moves when an event is SENT (written to a member's connection), as the platform's
 *   does: an event a client received but never stored is not sent again, except the last
 *   `redeliverCount` (option, default 0; the `redeliverCount` fault switch overrides it, 0 in the fault
 *   tests) re-sent to the next member after a disconnect (at-least-once delivery).
 * - A checkpoint is kept `checkpointRetentionMs` (7 days, sandbox clock) after the last member left;
 *   later the stream restarts at the end of the log.
 * - A stream created without `start_date` begins at its creation (the end of the log), or with the
 *   `newStreamStart: 'start-of-day'` option at the first event created on its creation's UTC day: the
 *   provider does not say which, and the product must be right under both.
 * - Filters: `resource_filter` lists resource names (singular or plural, `connection` for connection
 *   events); `event_type_filter` without `connection`/`connections` excludes connection events.
 */
import type { ServerResponse } from 'node:http';
import type { CoreBase } from './core-base.ts';
import { SseConnection } from './sse-connection.ts';
import type { LogEvent } from './state.ts';
import { isoMillis, isoSeconds, parseDay, startOfUtcDay } from './time.ts';
import { resourceFromName } from './types.ts';

export const MAX_STREAMS = 5;
export const MAX_MEMBERS = 3;

export interface StreamDefinition {
  id: string;
  name: string;
  resource_filter: string[];
  event_type_filter: string[];
  start_date: string | null;
  group: string;
  members: number;
  created_at: string;
  updated_at: string;
}

interface StreamRuntime {
  def: StreamDefinition;
  owner: string;
  cursor: number;
  kinds: Set<string> | null;
  includeConnections: boolean;
  members: SseConnection[];
  roundRobin: number;
  /** Log positions of the last events delivered, oldest first. */
  recent: number[];
  redeliverPending: boolean;
  lastDisconnectMs: number | null;
  stormRemaining: number;
  stormUntil: number;
}

export type ConnectOutcome = { ok: true } | { ok: false; status: number; message: string };

export class StreamHub {
  private readonly streams = new Map<string, StreamRuntime>();
  private readonly others = new Set<SseConnection>();
  private readonly core: CoreBase;

  constructor(core: CoreBase) {
    this.core = core;
  }

  /** Called on every new log event. */
  onEvent(): void {
    for (const stream of this.streams.values()) this.pump(stream);
  }

  list(owner: string): StreamDefinition[] {
    return [...this.streams.values()]
      .filter((s) => s.owner === owner)
      .map((s) => this.view(s))
      .reverse();
  }

  get(owner: string, id: string): StreamDefinition | null {
    const s = this.streams.get(id);
    return s && s.owner === owner ? this.view(s) : null;
  }

  /** Creates a stream, or says why not (limit reached, missing name, bad start_date or filter). */
  create(
    owner: string,
    body: Record<string, unknown>,
  ): StreamDefinition | { status: number; message: string } {
    const owned = [...this.streams.values()].filter((s) => s.owner === owner).length;
    if (owned >= MAX_STREAMS) {
      return {
        status: 422,
        message: `Maximum number of streams (${MAX_STREAMS}) reached for this organization`,
      };
    }
    const name = typeof body.name === 'string' && body.name !== '' ? body.name : null;
    if (!name) return { status: 422, message: 'name is required' };
    const list = (value: unknown): string[] =>
      Array.isArray(value) ? value.map(String) : typeof value === 'string' && value ? value.split(',') : [];
    const resourceFilter = list(body.resource_filter);
    const eventTypeFilter = list(body.event_type_filter);
    const startDate = typeof body.start_date === 'string' && body.start_date !== '' ? body.start_date : null;
    // Without start_date: at the end of the log (from its creation on), or at its creation day's start.
    let cursor =
      this.core.settings.newStreamStart === 'start-of-day'
        ? this.core.state.logIndexAt(startOfUtcDay(this.core.clock.now()))
        : this.core.state.log.length;
    if (startDate !== null) {
      const ms = parseDay(startDate.slice(0, 10));
      if (ms === null) return { status: 422, message: 'start_date must be YYYY-MM-DD' };
      cursor = this.core.state.logIndexAt(ms);
    }
    for (const r of resourceFilter) {
      if (!resourceFromName(r)) return { status: 422, message: `unknown resource in resource_filter: ${r}` };
    }
    const kinds =
      resourceFilter.length > 0 ? new Set(resourceFilter.map((r) => resourceFromName(r) as string)) : null;
    const now = isoMillis(this.core.clock.now());
    const id = this.core.prng.hexId();
    const runtime: StreamRuntime = {
      def: {
        id,
        name,
        resource_filter: resourceFilter,
        event_type_filter: eventTypeFilter,
        start_date: startDate,
        group: `group-${id.slice(0, 8)}`,
        members: 0,
        created_at: now,
        updated_at: now,
      },
      owner,
      cursor,
      kinds,
      includeConnections:
        (kinds === null || kinds.has('connection')) &&
        (eventTypeFilter.length === 0 || eventTypeFilter.some((t) => resourceFromName(t) === 'connection')),
      members: [],
      roundRobin: 0,
      recent: [],
      redeliverPending: false,
      lastDisconnectMs: null,
      stormRemaining: 0,
      stormUntil: 0,
    };
    this.streams.set(id, runtime);
    return this.view(runtime);
  }

  rename(owner: string, id: string, name: string): StreamDefinition | null {
    const s = this.streams.get(id);
    if (!s || s.owner !== owner) return null;
    s.def.name = name;
    s.def.updated_at = isoMillis(this.core.clock.now());
    return this.view(s);
  }

  remove(owner: string, id: string): StreamDefinition | { status: number; message: string } | null {
    const s = this.streams.get(id);
    if (!s || s.owner !== owner) return null;
    if (s.members.length > 0) {
      return { status: 409, message: 'Stream has connected clients; disconnect them before deleting it' };
    }
    this.streams.delete(id);
    return this.view(s);
  }

  connect(owner: string, id: string, res: ServerResponse): ConnectOutcome {
    const s = this.streams.get(id);
    if (!s || s.owner !== owner) return { ok: false, status: 404, message: 'Stream not found' };
    if (s.stormRemaining > 0 && Date.now() < s.stormUntil) {
      s.stormRemaining--;
      return { ok: false, status: 422, message: 'max client connections exceeded' };
    }
    if (s.members.length >= MAX_MEMBERS) {
      return { ok: false, status: 422, message: 'max client connections exceeded' };
    }
    const now = this.core.clock.now();
    if (
      s.members.length === 0 &&
      s.lastDisconnectMs !== null &&
      now - s.lastDisconnectMs > this.core.settings.checkpointRetentionMs
    ) {
      // The checkpoint expired: start again from now.
      s.cursor = this.core.state.log.length;
      s.recent = [];
      s.redeliverPending = false;
    }
    const member: SseConnection = new SseConnection(this.core, res, {
      streamId: s.def.id,
      members: () => ({ count: s.members.length, max: MAX_MEMBERS }),
      onDrain: () => this.pump(s),
      onClose: () => this.leave(s, member),
    });
    s.members.push(member);
    if (s.redeliverPending && !this.core.faults.current.silentStream) {
      s.redeliverPending = false;
      for (const seq of s.recent) member.sendData((this.core.state.log[seq] as LogEvent).json);
    }
    this.pump(s);
    return { ok: true };
  }

  /** Keeps a connection that is not a stream member (a replay) so shutdown can end it. */
  track(connection: SseConnection): void {
    this.others.add(connection);
    connection.onClosed(() => this.others.delete(connection));
  }

  /** Ends every open connection (sandbox shutdown). */
  closeAll(): void {
    for (const s of this.streams.values()) for (const m of [...s.members]) m.close();
    for (const c of [...this.others]) c.close();
  }

  private leave(s: StreamRuntime, member: SseConnection): void {
    const index = s.members.indexOf(member);
    if (index < 0) return;
    s.members.splice(index, 1);
    s.redeliverPending = s.recent.length > 0;
    if (s.members.length === 0) s.lastDisconnectMs = this.core.clock.now();
    const storm = this.core.faults.current.reconnectStorm;
    if (storm) {
      s.stormRemaining = storm.rejections;
      s.stormUntil = Date.now() + storm.windowMs;
    }
    this.pump(s);
  }

  private matches(s: StreamRuntime, event: LogEvent): boolean {
    if (event.kind === 'connection') return s.includeConnections;
    return s.kinds === null || s.kinds.has(event.kind);
  }

  private pump(s: StreamRuntime): void {
    if (this.core.faults.current.silentStream) return;
    const log = this.core.state.log;
    const keep = this.core.faults.current.redeliverCount ?? this.core.settings.redeliverCount;
    while (s.cursor < log.length) {
      const member = this.nextMember(s);
      if (!member) return;
      const event = log[s.cursor] as LogEvent;
      s.cursor++;
      if (!this.matches(s, event)) continue;
      member.sendData(event.json);
      s.recent.push(event.seq);
      if (s.recent.length > keep) s.recent.shift();
    }
  }

  private nextMember(s: StreamRuntime): SseConnection | null {
    for (let i = 0; i < s.members.length; i++) {
      const member = s.members[(s.roundRobin + i) % s.members.length] as SseConnection;
      if (member.writable) {
        s.roundRobin = (s.roundRobin + i + 1) % s.members.length;
        return member;
      }
    }
    return null;
  }

  private view(s: StreamRuntime): StreamDefinition {
    return { ...s.def, members: s.members.length };
  }

  /** Ground truth for tests: each stream's checkpoint position in the event log. */
  checkpoints(): { id: string; cursor: number; members: number; last_disconnect: string | null }[] {
    return [...this.streams.values()].map((s) => ({
      id: s.def.id,
      cursor: s.cursor,
      members: s.members.length,
      last_disconnect: s.lastDisconnectMs === null ? null : isoSeconds(s.lastDisconnectMs),
    }));
  }
}
