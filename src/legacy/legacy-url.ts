/** A copy of `url` with some query parameters set (the original is left alone). */
export function buildUrlFrom(url: URL, params: Record<string, string | number | undefined>): URL {
  const copy = new URL(url);
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) copy.searchParams.delete(name);
    else copy.searchParams.set(name, String(value));
  }
  return copy;
}
