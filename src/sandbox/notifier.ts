/**
 * Outgoing notifications: enterprise push notifications to every registered push URL when legacy
 * records become available, and partner disconnect notifications to the partner's notification URL.
 *
 * Push body (our definition; the spec leaves it open):
 * `{ "notifications": [ { "object", "_id", "user_id", "uid", "organization_id", "last_updated", "url" } ] }`
 * where `url` is the retrieval path relative to the legacy base URL (without `access_token`).
 */
export interface PushItem {
  object: string;
  _id: string;
  user_id: string;
  uid: string | null;
  organization_id: string;
  last_updated: string;
  url: string;
}

export interface Delivery {
  kind: 'push' | 'disconnect';
  url: string;
  body: unknown;
  status: number | null;
  error: string | null;
}

export class Notifier {
  readonly pushUrls = new Set<string>();
  partnerNotificationUrl: string | null = null;
  readonly deliveries: Delivery[] = [];
  private readonly pending = new Set<Promise<void>>();

  push(items: PushItem[]): void {
    if (items.length === 0) return;
    for (const url of this.pushUrls) this.post('push', url, { notifications: items });
  }

  disconnect(body: unknown): void {
    if (this.partnerNotificationUrl) this.post('disconnect', this.partnerNotificationUrl, body);
  }

  /** Resolves when every notification sent so far has been answered or has failed. */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private post(kind: Delivery['kind'], url: string, body: unknown): void {
    const delivery: Delivery = { kind, url, body, status: null, error: null };
    this.deliveries.push(delivery);
    const done = fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    })
      .then(async (res) => {
        delivery.status = res.status;
        await res.arrayBuffer();
      })
      .catch((error: unknown) => {
        delivery.error = error instanceof Error ? error.message : String(error);
      })
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
  }
}
