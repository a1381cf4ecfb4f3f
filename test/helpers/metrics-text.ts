// Reading the Prometheus text the admin listener serves at /metrics.

export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The /metrics text of an admin listener. */
export async function metricsText(adminUrl: string): Promise<string> {
  return (await fetch(`${adminUrl}/metrics`)).text();
}

/** Every sample of an exposition; a line that is neither a sample, a comment nor blank throws. */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** Sum of the samples of `name` whose labels include `labels`. */
export function sumSamples(samples: readonly MetricSample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

/**
 * The value of one series written exactly as in the text (`name{label="v"}`); `whenMissing`
 * when the text has no such line (a labelled counter appears only once counted).
 */
export function metricValue(text: string, series: string, whenMissing = Number.NaN): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return whenMissing;
}
