// Counters and histograms for the series every request touches. prom-client re-validates
// and re-hashes the label set on every inc()/observe(), even of a child bound with
// labels(), which for the five updates of a request is a visible share of its CPU (decision
// 0003 has the measurement). These bind a series once to plain numbers; they register in the
// same prom-client Registry and answer its get()/getForPromString() in prom-client's own
// shape, so /metrics, the cluster aggregation and the metric names are what prom-client's
// own metrics would give.
import type { Registry } from 'prom-client';

type LabelSet = Record<string, string>;

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels?: LabelSet;
  value: number;
  metricName?: string;
}

interface ExportedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: ExportedValue[];
  aggregator: 'sum';
}

export interface MetricConfig<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

export interface BoundCounter {
  inc(value?: number): void;
}

export interface BoundHistogram {
  observe(seconds: number): void;
}

/** Label names and values → one series: labels given positionally or as an object, as in prom-client. */
abstract class SeriesMetric<L extends string, S> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly aggregator = 'sum' as const;
  private seriesByKey = new Map<string, { labels: LabelSet; state: S }>();

  constructor(config: MetricConfig<L>) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    // The Registry only calls get(), getForPromString() and reset() and reads name.
    for (const registry of config.registers) registry.registerMetric(this as never);
  }

  protected abstract newState(): S;

  /** The state of one series; call once and keep it — this is the slow path. */
  protected bind(values: (string | number)[] | [Partial<Record<L, string | number>>]): S {
    const labels = this.labelSet(values);
    const key = this.labelNames.map((name) => labels[name] ?? '').join('\u0000');
    let series = this.seriesByKey.get(key);
    if (!series) {
      series = { labels, state: this.newState() };
      this.seriesByKey.set(key, series);
    }
    return series.state;
  }

  protected entries(): Iterable<{ labels: LabelSet; state: S }> {
    return this.seriesByKey.values();
  }

  reset(): void {
    this.seriesByKey = new Map();
  }

  private labelSet(values: (string | number)[] | [Partial<Record<L, string | number>>]): LabelSet {
    const labels: LabelSet = {};
    const first = values[0];
    if (values.length === 1 && typeof first === 'object' && first !== null) {
      for (const [name, value] of Object.entries(first)) {
        if (!this.labelNames.includes(name as L)) throw new Error(`Added label "${name}" is not included in initial labelset: ${JSON.stringify(this.labelNames)}`);
        if (value !== undefined) labels[name] = String(value);
      }
      return labels;
    }
    if (values.length > this.labelNames.length) throw new Error(`Invalid number of arguments (${values.length}) for label set: ${JSON.stringify(this.labelNames)}`);
    values.forEach((value, index) => (labels[this.labelNames[index]!] = String(value)));
    return labels;
  }
}

export class HotCounter<L extends string> extends SeriesMetric<L, { value: number; inc(value?: number): void }> {
  readonly type = 'counter' as const;

  protected newState(): { value: number; inc(value?: number): void } {
    return {
      value: 0,
      inc(by = 1) {
        // prom-client's rules: finite and never negative.
        if (!(by >= 0) || by === Infinity) throw new TypeError(`counter increment must be a finite number ≥ 0, got ${by}`);
        this.value += by;
      },
    };
  }

  labels(...values: (string | number)[] | [Partial<Record<L, string | number>>]): BoundCounter {
    return this.bind(values);
  }

  inc(labels: Partial<Record<L, string | number>>, value = 1): void {
    this.bind([labels]).inc(value);
  }

  async get(): Promise<ExportedMetric> {
    return this.exported();
  }

  async getForPromString(): Promise<ExportedMetric> {
    return this.exported();
  }

  private exported(): ExportedMetric {
    const values: ExportedValue[] = [];
    for (const { labels, state } of this.entries()) values.push({ labels: { ...labels }, value: state.value });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

interface HistogramState extends BoundHistogram {
  counts: Float64Array;
  sum: number;
  count: number;
}

export class HotHistogram<L extends string> extends SeriesMetric<L, HistogramState> {
  readonly type = 'histogram' as const;
  readonly upperBounds: readonly number[];

  constructor(config: MetricConfig<L> & { buckets: readonly number[] }) {
    super(config);
    this.upperBounds = [...config.buckets].sort((a, b) => a - b);
  }

  protected newState(): HistogramState {
    const bounds = this.upperBounds;
    return {
      // One slot per bucket plus one for values above the last bound (+Inf only).
      counts: new Float64Array(bounds.length + 1),
      sum: 0,
      count: 0,
      observe(seconds: number) {
        if (!Number.isFinite(seconds)) throw new TypeError(`histogram value must be a finite number, got ${seconds}`);
        let i = 0;
        while (i < bounds.length && seconds > bounds[i]!) i++;
        this.counts[i]! += 1;
        this.sum += seconds;
        this.count += 1;
      },
    };
  }

  labels(...values: (string | number)[] | [Partial<Record<L, string | number>>]): BoundHistogram {
    return this.bind(values);
  }

  observe(labels: Partial<Record<L, string | number>>, seconds: number): void {
    this.bind([labels]).observe(seconds);
  }

  /** The registry's JSON form (cluster aggregation): labels merged, as prom-client's get(). */
  async get(): Promise<ExportedMetric> {
    const exported = this.exported();
    for (const value of exported.values) {
      value.labels = { ...value.labels, ...value.sharedLabels };
      delete value.sharedLabels;
    }
    return exported;
  }

  /** The text form: series labels passed as sharedLabels, so `le` comes first as in prom-client. */
  async getForPromString(): Promise<ExportedMetric> {
    return this.exported();
  }

  private exported(): ExportedMetric {
    const values: ExportedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { labels, state } of this.entries()) {
      let cumulative = 0;
      this.upperBounds.forEach((bound, i) => {
        cumulative += state.counts[i]!;
        values.push({ labels: { le: bound }, sharedLabels: labels, value: cumulative, metricName: bucketName });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: labels, value: state.count, metricName: bucketName });
      values.push({ labels: {}, sharedLabels: labels, value: state.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: state.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

/**
 * A counter series bound when it is first counted, as a prom-client child is: the series
 * appears on /metrics with its first count, not at 0 from the start.
 */
export function boundOnFirstUse<L extends string>(counter: HotCounter<L>, ...values: string[]): BoundCounter {
  let bound: BoundCounter | undefined;
  return {
    inc(value?: number) {
      (bound ??= counter.labels(...values)).inc(value);
    },
  };
}
