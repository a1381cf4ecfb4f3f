// Small numeric helpers shared by the scenarios: medians of runs, percentiles of samples,
// per-round ratios. Nothing here knows about targets or tools.

/** Median of the finite numbers in `values`; null when there are none. */
export function median(values) {
  const xs = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return null;
  const mid = xs.length >> 1;
  return xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
}

/** Nearest-rank percentile (0–100) of an ascending-sorted array; null when empty. */
export function percentileSorted(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Sorts a copy (as Float64Array, so numbers sort numerically) and takes the percentiles. */
export function percentiles(values, ps = [50, 90, 99, 99.9]) {
  const sorted = Float64Array.from(values).sort();
  const out = { count: sorted.length };
  for (const p of ps) out[`p${String(p).replace('.', '_')}`] = percentileSorted(sorted, p);
  out.max = sorted.length ? sorted[sorted.length - 1] : null;
  out.mean = sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null;
  return out;
}

export const round = (x, digits = 1) => {
  if (x === null || x === undefined || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/** a / b, or null when either side is missing or b is zero. */
export function ratio(a, b) {
  if (typeof a !== 'number' || typeof b !== 'number' || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return a / b;
}

export function sum(values) {
  return values.reduce((n, v) => n + (typeof v === 'number' && Number.isFinite(v) ? v : 0), 0);
}
