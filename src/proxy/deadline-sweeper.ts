// Deadlines of in-flight upstream exchanges, checked by one shared timer instead of a timer
// per request. A Node timer per request (an object, an insert and a removal) costs more CPU
// than it saves, and undici's own timers are fast-timer objects kept until its next tick,
// up to a second after the request ends (decision 0007 has the measurements). Here an entry
// is linked into an intrusive list (no allocation) and every `periodMs` each entry checks
// its own deadlines, so a deadline fires up to one period late.
//
// The check runs from setImmediate after the period's timer: on a busy event loop a reply
// may already sit unread in its socket when the timer fires, and the poll phase between the
// two reads it first, so only an answer that truly has not come times out.

export interface DeadlineEntry {
  /** Links owned by the sweeper; null while not in its list. */
  sweepPrev: DeadlineEntry | null;
  sweepNext: DeadlineEntry | null;
  sweeping: boolean;
  /** Called once per period while listed, with the monotonic time (performance.now() scale). */
  checkDeadlines(nowMs: number): void;
}

export const DEFAULT_SWEEP_PERIOD_MS = 100;

export class DeadlineSweeper {
  private head: DeadlineEntry | null = null;
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly onPeriod = (): void => {
    setImmediate(this.sweep);
  };
  private readonly sweep = (): void => {
    const nowMs = this.now();
    let entry = this.head;
    while (entry !== null) {
      // Read before the check: an entry that ends removes itself. An entry removed by
      // another's check ends this pass early; the rest are checked a period later.
      const next = entry.sweepNext;
      entry.checkDeadlines(nowMs);
      entry = next;
    }
    // Idle: no timer left running while nothing is in flight.
    if (this.head === null && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  };

  constructor(
    private readonly periodMs = DEFAULT_SWEEP_PERIOD_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get size(): number {
    return this.count;
  }

  add(entry: DeadlineEntry): void {
    if (entry.sweeping) return;
    entry.sweeping = true;
    entry.sweepPrev = null;
    entry.sweepNext = this.head;
    if (this.head !== null) this.head.sweepPrev = entry;
    this.head = entry;
    this.count += 1;
    if (this.timer === null) {
      // Unref'd: in-flight requests keep the process alive through their sockets, not this.
      this.timer = setInterval(this.onPeriod, this.periodMs);
      this.timer.unref();
    }
  }

  remove(entry: DeadlineEntry): void {
    if (!entry.sweeping) return;
    entry.sweeping = false;
    if (entry.sweepPrev !== null) entry.sweepPrev.sweepNext = entry.sweepNext;
    else this.head = entry.sweepNext;
    if (entry.sweepNext !== null) entry.sweepNext.sweepPrev = entry.sweepPrev;
    entry.sweepPrev = null;
    entry.sweepNext = null;
    this.count -= 1;
  }
}
