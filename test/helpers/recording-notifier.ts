// A Notifier that records what the producers publish, applying the dedupe rule the real one
// keeps across instances (one event per dedupe key per TTL) in memory: a test double for the
// boundary the outbox owns (src/notifications/), so producer tests see exactly what they
// would hand it. The end-to-end tests use the real notifier and a real receiver.
import type { EventType, Notifier } from '../../src/notifications/notifier.js';

export interface RecordedEvent {
  type: EventType;
  subject: string;
  data: Record<string, unknown>;
  dedupeKey: string | undefined;
}

export class RecordingNotifier implements Notifier {
  readonly events: RecordedEvent[] = [];
  /** publish calls whose dedupe key was already taken. */
  deduplicated = 0;
  private readonly taken = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  publish(type: EventType, subject: string, data: Record<string, unknown>, options?: { dedupeKey?: string; dedupeTtlMs?: number }): void {
    const key = options?.dedupeKey;
    if (key !== undefined) {
      const until = this.taken.get(key);
      if (until !== undefined && until > this.now()) {
        this.deduplicated++;
        return;
      }
      this.taken.set(key, this.now() + (options?.dedupeTtlMs ?? 0));
    }
    // A copy through JSON: what an outbox would store.
    this.events.push(JSON.parse(JSON.stringify({ type, subject, data, dedupeKey: key })) as RecordedEvent);
  }

  ofType(type: EventType): RecordedEvent[] {
    return this.events.filter((event) => event.type === type);
  }

  async close(): Promise<void> {}
}
