/** Window length and overlap of legacy `latest` polling, from `sync.legacyWindowHours` / `legacyOverlapMinutes`. */
import type { Config } from '../config/schema.ts';
import type { LegacyWindowOptions } from './legacy-windows.ts';

export interface LegacyWindowSettings extends Required<LegacyWindowOptions> {}

export function legacyWindowSettings(config: Config): LegacyWindowSettings {
  const windowMs = config.sync.legacyWindowHours * 3_600_000;
  // An overlap as long as the window would never make progress: keep it strictly shorter.
  const overlapMs = Math.min(config.sync.legacyOverlapMinutes * 60_000, windowMs - 60_000);
  return { windowMs, overlapMs: Math.max(0, overlapMs) };
}
