/**
 * The one walker over error chains: an error, its `cause`, its `cause`'s `cause` …, and the inner
 * errors of an `AggregateError` (Node's happy-eyeballs connect throws one per address). undici and pg
 * wrap the socket error, so the code that says what happened is often a link or two down.
 */

/** Links visited at most, so a cyclic or absurdly deep chain cannot hang a classifier. */
const MAX_LINKS = 16;

/** The error and every error it wraps, outermost first (breadth first), objects only. */
export function* causeChain(error: unknown): Generator<object> {
  const queue: unknown[] = [error];
  const seen = new Set<unknown>();
  while (queue.length > 0 && seen.size < MAX_LINKS) {
    const link = queue.shift();
    if (!link || typeof link !== 'object' || seen.has(link)) continue;
    seen.add(link);
    yield link;
    const { cause, errors } = link as { cause?: unknown; errors?: unknown };
    if (cause !== undefined) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...errors);
  }
}

/** The first string `code` in the chain (`ECONNRESET`, `UND_ERR_SOCKET`, `57P01` …). */
export function errorCodeOf(error: unknown): string | undefined {
  for (const link of causeChain(error)) {
    const code = (link as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** The first `code` in the chain that is one of `codes`. */
export function errorCodeIn(error: unknown, codes: ReadonlySet<string>): string | undefined {
  for (const link of causeChain(error)) {
    const code = (link as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return code;
  }
  return undefined;
}

/** True when some link's `code` is in `codes`. */
export function hasErrorCode(error: unknown, codes: ReadonlySet<string>): boolean {
  return errorCodeIn(error, codes) !== undefined;
}
