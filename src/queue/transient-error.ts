/**
 * Whether an error means "a service we depend on is away" (Postgres restarting, a cut connection)
 * rather than "this job is wrong". The worker delays such jobs without spending an attempt, so an
 * outage longer than the retry back-off does not fail work for good: the worker waits it out.
 */
const CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // PostgreSQL: admin/crash shutdown, cannot connect now, connection exceptions.
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

const MESSAGES =
  /Connection terminated|connection (?:is )?(?:closed|ended)|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (?:starting up|shutting down)/i;

export function isTransientInfraError(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isTransientInfraError(inner, depth + 1)))
    return true;
  return isTransientInfraError(e.cause, depth + 1);
}
