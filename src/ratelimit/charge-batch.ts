// The answers' charges of one event-loop turn, summed per (subject, scope instances) and per budget,
// so a turn sends one charge call per subject however many answers finished in it
// (docs/rate-limits.md "Token budgets", "In Redis: no extra round trip"). Each budget keeps its
// own amount (tokens, micro-dollars, a tool's calls): the charge operation takes one per window.
import type { ChargeUsage, RateWindow, ScopeKeys } from './rate-limiter.js';
import { chargeUnits } from './window-math.js';

export interface QueuedCharge {
  subject: string;
  scopes: ScopeKeys | undefined;
  windows: readonly RateWindow[];
  /** Per window of `windows`: the units to charge it. */
  amounts: number[];
}

/** Per window, what the answer charges it; undefined when it charges nothing. */
export function chargeAmounts(windows: readonly RateWindow[], usage: ChargeUsage): number[] | undefined {
  let any = false;
  const amounts: number[] = new Array(windows.length);
  for (let i = 0; i < windows.length; i += 1) {
    const units = chargeUnits(windows[i] as RateWindow, usage);
    amounts[i] = units > 0 ? units : 0;
    if (units > 0) any = true;
  }
  return any ? amounts : undefined;
}

export class ChargeBatch {
  private queued = new Map<string, QueuedCharge>();

  get size(): number {
    return this.queued.size;
  }

  /**
   * Adds an answer's amounts to its subject's queued charge; returns a charge displaced by a
   * window change within the turn (a reload), which the caller sends on its own.
   */
  add(subject: string, scopes: ScopeKeys | undefined, windows: readonly RateWindow[], amounts: number[]): QueuedCharge | undefined {
    const key = scopes === undefined ? subject : `${subject}\n${scopes.id}`;
    const queued = this.queued.get(key);
    if (queued !== undefined && queued.windows === windows) {
      for (let i = 0; i < amounts.length; i += 1) queued.amounts[i] = (queued.amounts[i] as number) + (amounts[i] as number);
      return undefined;
    }
    this.queued.set(key, { subject, scopes, windows, amounts });
    return queued;
  }

  /** The turn's charges, leaving the batch empty. */
  take(): Iterable<QueuedCharge> {
    const charges = this.queued;
    this.queued = new Map();
    return charges.values();
  }
}
