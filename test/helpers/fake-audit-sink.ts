// A test double audit sink that fails or stalls on command.
import type { AuditLine, AuditRecord } from '../../src/audit/audit-record.js';
import type { AuditSink } from '../../src/audit/audit-sink.js';

/** A test double sink: keeps what it is given; fails while `failing`; stalls while held. */
export class FakeSink implements AuditSink {
  readonly batches: AuditRecord[][] = [];
  failing = false;
  closed = false;
  attempts = 0;
  private gate: Promise<void> | undefined;
  private releaseGate: (() => void) | undefined;

  constructor(readonly name: string = 'fake') {}

  get ids(): string[] {
    return this.batches.flat().map((r) => r.id);
  }

  /** Writes from now on wait until the returned function is called. */
  hold(): () => void {
    this.gate = new Promise((resolve) => {
      this.releaseGate = resolve;
    });
    return () => {
      this.gate = undefined;
      this.releaseGate?.();
    };
  }

  async write(lines: readonly AuditLine[]): Promise<void> {
    this.attempts++;
    if (this.gate) await this.gate;
    if (this.failing) throw new Error(`${this.name} sink is down`);
    this.batches.push(lines.map((line) => JSON.parse(line) as AuditRecord));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
