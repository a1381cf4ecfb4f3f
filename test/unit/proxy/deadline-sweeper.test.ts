import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineSweeper, type DeadlineEntry } from '../../../src/proxy/deadline-sweeper.js';

class Entry implements DeadlineEntry {
  sweepPrev: DeadlineEntry | null = null;
  sweepNext: DeadlineEntry | null = null;
  sweeping = false;
  readonly checks: number[] = [];
  constructor(private readonly onCheck: (self: Entry, nowMs: number) => void = () => {}) {}
  checkDeadlines(nowMs: number): void {
    this.checks.push(nowMs);
    this.onCheck(this, nowMs);
  }
}

describe('DeadlineSweeper', () => {
  let nowMs = 1_000;
  const clock = (): number => nowMs;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setImmediate'] });
    nowMs = 1_000;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** One period: the interval fires, then the check runs from the setImmediate it queued. */
  function period(ms = 100): void {
    nowMs += ms;
    vi.advanceTimersByTime(ms);
    vi.advanceTimersToNextTimer();
  }

  it('checks every listed entry once per period with the injected clock, and no removed one', () => {
    const sweeper = new DeadlineSweeper(100, clock);
    const a = new Entry();
    const b = new Entry();
    sweeper.add(a);
    sweeper.add(b);
    sweeper.add(a);
    expect(sweeper.size).toBe(2);
    period();
    expect(a.checks).toEqual([1_100]);
    expect(b.checks).toEqual([1_100]);
    sweeper.remove(a);
    sweeper.remove(a);
    expect(sweeper.size).toBe(1);
    period();
    expect(a.checks).toEqual([1_100]);
    expect(b.checks).toEqual([1_100, 1_200]);
  });

  it('lets an entry remove itself during its check without skipping the others', () => {
    const sweeper = new DeadlineSweeper(100, clock);
    const entries = [0, 1, 2, 3].map(() => new Entry((self, now) => now >= 1_100 && sweeper.remove(self)));
    for (const entry of entries) sweeper.add(entry);
    period();
    expect(entries.map((e) => e.checks.length)).toEqual([1, 1, 1, 1]);
    expect(sweeper.size).toBe(0);
  });

  it('runs no timer while nothing is listed, and starts one again for the next entry', () => {
    const sweeper = new DeadlineSweeper(100, clock);
    expect(vi.getTimerCount()).toBe(0);
    const a = new Entry();
    sweeper.add(a);
    expect(vi.getTimerCount()).toBe(1);
    sweeper.remove(a);
    period();
    expect(vi.getTimerCount()).toBe(0);
    const b = new Entry();
    sweeper.add(b);
    period();
    expect(b.checks).toEqual([1_200]);
  });

  it('keeps the list consistent under random adds and removes', () => {
    const sweeper = new DeadlineSweeper(100, clock);
    const entries = Array.from({ length: 50 }, () => new Entry());
    const listed = new Set<Entry>();
    let seed = 7;
    for (let step = 0; step < 2_000; step++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      const entry = entries[seed % entries.length]!;
      if (seed % 3 === 0) {
        sweeper.remove(entry);
        listed.delete(entry);
      } else {
        sweeper.add(entry);
        listed.add(entry);
      }
    }
    expect(sweeper.size).toBe(listed.size);
    for (const entry of entries) entry.checks.length = 0;
    period();
    expect(entries.filter((e) => e.checks.length === 1)).toEqual([...listed].sort((x, y) => entries.indexOf(x) - entries.indexOf(y)));
  });
});
