/**
 * Outgoing notifications: enterprise push notifications to every registered push URL when legacy
 * records become available, and partner disconnect notifications to the partner's notification URL.
 *
 * Push, exactly as the provider documents it (docs/platform.md, "Enterprise push notifications"):
 * body `{ "data": [ { "_id": <v1 user _id>, "activity_type": <object>, "activity_date": <the record's
 * timestamp, "+00:00" form>, "source": <app> } ] }`, headers `Content-Type: application/json`,
 * `X-Validic-Timestamp` (send time, in the provider example's form `2015-12-08T16:04:18029095657000`:
 * UTC seconds followed by a dot-less fraction) and `X-Validic-Signature` = Base64(HMAC-SHA1(application
 * secret, org access token + "notification" + timestamp)). The send time is the real clock (it is a
 * transport header the receiver compares with its own clock), not the sandbox's data clock.
 * The signature is computed here, not with the worker's src/push/push-admission.ts, on purpose: the
 * sandbox is the other side of the wire, and sharing the code would hide a misreading of the formula.
 */
import { createHmac } from 'node:crypto';

export interface PushItem {
  _id: string;
  activity_type: string;
  activity_date: string;
  source: string;
}

export interface Delivery {
  kind: 'push' | 'disconnect';
  url: string;
  body: unknown;
  headers: Record<string, string>;
  status: number | null;
  error: string | null;
}

export interface PushSigning {
  applicationSecret: string;
  /** The legacy organization's access token (part of the signed message). */
  accessToken: string;
}

/**
 * `YYYY-MM-DDTHH:MM:SS` + 12 fraction digits, no dot, no zone (UTC): the provider example's form. The
 * digits past the millisecond carry `sequence`, so two notifications sent within one millisecond get
 * different timestamps (the provider's 12 digits tell its sends apart), hence different signatures:
 * a receiver accepts each signature once.
 */
export function providerTimestamp(ms: number, sequence = 0): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 19)}${iso.slice(20, 23)}${String(sequence % 1_000_000_000).padStart(9, '0')}`;
}

export class Notifier {
  readonly pushUrls = new Set<string>();
  partnerNotificationUrl: string | null = null;
  readonly deliveries: Delivery[] = [];
  private readonly pending = new Set<Promise<void>>();

  private readonly signing: PushSigning;
  private sent = 0;

  constructor(signing: PushSigning) {
    this.signing = signing;
  }

  push(items: PushItem[]): void {
    if (items.length === 0) return;
    for (const url of this.pushUrls) {
      const timestamp = providerTimestamp(Date.now(), ++this.sent);
      this.post(
        'push',
        url,
        { data: items },
        {
          'x-validic-timestamp': timestamp,
          'x-validic-signature': createHmac('sha1', this.signing.applicationSecret)
            .update(`${this.signing.accessToken}notification${timestamp}`)
            .digest('base64'),
        },
      );
    }
  }

  disconnect(body: unknown): void {
    if (this.partnerNotificationUrl) this.post('disconnect', this.partnerNotificationUrl, body);
  }

  /** Resolves when every notification sent so far has been answered or has failed. */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private post(kind: Delivery['kind'], url: string, body: unknown, extra: Record<string, string> = {}): void {
    const headers = { 'content-type': 'application/json', ...extra };
    const delivery: Delivery = { kind, url, body, headers, status: null, error: null };
    this.deliveries.push(delivery);
    const done = fetch(url, {
      method: 'POST',
      headers,
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
