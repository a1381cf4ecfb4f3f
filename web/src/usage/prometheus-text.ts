// Reads the few samples the Agents page shows from the admin listener's /metrics
// (Prometheus text format 0.0.4): name{label="value",...} value.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function unescape(value: string): string {
  return value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** Every sample of the metrics named in `names`. */
export function parseSamples(text: string, names: ReadonlySet<string>): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match || !names.has(match[1]!)) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name!] = unescape(value!);
    const value = Number(match[3]);
    if (!Number.isNaN(value)) samples.push({ name: match[1]!, labels, value });
  }
  return samples;
}

/** The sum of a metric's samples whose labels include `where`. */
export function sumOf(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) if (s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)) total += s.value;
  return total;
}
