/**
 * A stream/replay `data` frame carries one JSON payload: a record of any resource type or a connection
 * event. The frame does not say which, so decide by shape: a connection event has `action`
 * create/delete and none of a record's marks (`checksum`, `metrics`, `start_time`); anything else is
 * treated as a record (and an unusable one is quarantined by the record normalizer).
 */
import { isJsonObject } from './json-shape.ts';

export type FrameRoute = 'connection_event' | 'record';

const CONNECTION_ACTIONS = new Set(['create', 'delete']);
const RECORD_MARKS = ['checksum', 'metrics', 'start_time', 'end_time', 'log_id'];

export function routeFrame(payload: unknown): FrameRoute {
  if (!isJsonObject(payload)) return 'record';
  const action = payload.action;
  if (typeof action !== 'string' || !CONNECTION_ACTIONS.has(action)) return 'record';
  if (RECORD_MARKS.some((mark) => mark in payload)) return 'record';
  return 'connection_event';
}
