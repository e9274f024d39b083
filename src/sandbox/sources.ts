/**
 * The data sources the generator draws from: which resource types each one produces and whether it
 * is a cloud/cellular source (those report connection events; mobile-SDK sources do not).
 */
import type { ResourceType } from './types.ts';

export interface SourceInfo {
  type: string;
  resources: ResourceType[];
  /** Cloud and cellular sources report connection events; mobile-SDK sources do not. */
  reportsConnections: boolean;
  device: { name: string; type: string } | null;
}

export const SOURCES: SourceInfo[] = [
  {
    type: 'fitbit',
    resources: ['intraday', 'summary', 'sleep', 'workout'],
    reportsConnections: true,
    device: { name: 'Charge 6', type: 'tracker' },
  },
  {
    type: 'garmin_connect',
    resources: ['intraday', 'summary', 'workout', 'sleep'],
    reportsConnections: true,
    device: { name: 'Forerunner 265', type: 'watch' },
  },
  {
    type: 'withings',
    resources: ['measurement'],
    reportsConnections: true,
    device: { name: 'Body+', type: 'scale' },
  },
  {
    type: 'omron',
    resources: ['measurement'],
    reportsConnections: true,
    device: { name: 'BP7450', type: 'blood_pressure_monitor' },
  },
  { type: 'myfitnesspal', resources: ['nutrition'], reportsConnections: true, device: null },
  {
    type: 'dexcom',
    resources: ['cgm', 'intraday'],
    reportsConnections: true,
    device: { name: 'G7', type: 'cgm' },
  },
  {
    type: 'apple_health',
    resources: ['summary', 'workout', 'sleep', 'nutrition', 'measurement'],
    reportsConnections: false,
    device: null,
  },
  {
    type: 'cellular_bp',
    resources: ['measurement'],
    reportsConnections: true,
    device: { name: 'Cellular BP cuff', type: 'blood_pressure_monitor' },
  },
];

/** Records from before the rename day carry the old name (`nokia` became `withings`). */
export const RENAMED_SOURCES: Record<string, string> = { withings: 'nokia' };

export function sourceInfo(type: string): SourceInfo | undefined {
  return SOURCES.find((s) => s.type === type || RENAMED_SOURCES[s.type] === type);
}

/**
 * Zones a user may be given (control API `addUser`) but generated users never draw (adding them to
 * TIMEZONES would change every seeded data set): the extremes of UTC offsets.
 */
export const EXTREME_TIMEZONES: { timezone: string; country_code: string; offset: number }[] = [
  { timezone: 'Etc/GMT+12', country_code: 'UM', offset: -43_200 },
  { timezone: 'Pacific/Kiritimati', country_code: 'KI', offset: 50_400 },
];

export const TIMEZONES: { timezone: string; country_code: string; offset: number }[] = [
  { timezone: 'America/New_York', country_code: 'US', offset: -18_000 },
  { timezone: 'America/Chicago', country_code: 'US', offset: -21_600 },
  { timezone: 'America/Los_Angeles', country_code: 'US', offset: -28_800 },
  { timezone: 'Europe/London', country_code: 'GB', offset: 0 },
  { timezone: 'Europe/Berlin', country_code: 'DE', offset: 3_600 },
  { timezone: 'Asia/Kolkata', country_code: 'IN', offset: 19_800 },
  { timezone: 'Australia/Sydney', country_code: 'AU', offset: 36_000 },
];
