/** A sweep period as people read it (pure): "45 min", "12.5 h", "5.3 d"; null (no share) is "never". */
export function formatPeriod(ms: number | null): string {
  if (ms === null) return 'never';
  const minutes = Math.round(ms / 60_000);
  if (minutes < 2) return `${Math.round(ms / 1000)} s`;
  if (minutes <= 120) return `${minutes} min`;
  if (ms < 48 * 3_600_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}
