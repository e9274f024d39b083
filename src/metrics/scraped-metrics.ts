/**
 * Metrics whose values live elsewhere (the warehouse, Redis, this process's state) and are read at scrape
 * time: each scrape empties the metric, then `read` sets what is true now, so a series whose org or state
 * is gone disappears and a source that fails leaves the metric empty, never stale.
 */
import { type Counter, Gauge, type Registry } from 'prom-client';

/** The `collect` of a metric read at scrape time: a gauge, or a counter of totals another store keeps. */
export function readAtScrape<M extends Gauge | Counter>(read: (metric: M) => unknown) {
  return {
    async collect(this: M) {
      this.reset();
      await read(this);
    },
  };
}

export function scrapedGauge(
  registry: Registry,
  name: string,
  help: string,
  labelNames: string[],
  read: (gauge: Gauge) => unknown,
): Gauge {
  return new Gauge({ name, help, labelNames, registers: [registry], ...readAtScrape(read) });
}

/**
 * `read`, asked again only once its last answer is over a second old: the metrics one scrape collects
 * from a source share one read of it (each collect() would otherwise read it again).
 */
export function oncePerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > 1000) last = { at: Date.now(), value: read() };
    return last.value;
  };
}
