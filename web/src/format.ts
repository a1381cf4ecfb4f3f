// How times and numbers read on the page: short, in the viewer's locale and time zone, with
// the exact ISO time one hover away (title attribute).

const dateOnly = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
const dateThisYear = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
// Dates with a time, written like the dates alone ("Dec 7, 1:13 AM"): one way across the pages.
const dateTimeOnly = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const dateTimeThisYear = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });
// Costs are often fractions of a cent: up to six decimals (the rollups' micro-dollar unit).
const usd = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });

/** "Nov 24", with the year only when it is not this year's. */
export function formatDate(iso: string, nowMs: number): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return new Date(ms).getFullYear() === new Date(nowMs).getFullYear() ? dateThisYear.format(ms) : dateOnly.format(ms);
}

/** "Dec 7, 1:13 AM", with the year only when it is not this year's: for events, minutes apart. */
export function formatDateTime(iso: string, nowMs: number): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return new Date(ms).getFullYear() === new Date(nowMs).getFullYear() ? dateTimeThisYear.format(ms) : dateTimeOnly.format(ms);
}

/** "3 min ago", "in 5 days": for last-used and expiry columns. */
export function relativeTime(iso: string | null, nowMs: number, none = '—'): string {
  if (iso === null) return none;
  const deltaMs = Date.parse(iso) - nowMs;
  const abs = Math.abs(deltaMs);
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'min'],
  ];
  for (const [ms, unit] of units) {
    if (abs >= ms) {
      const n = Math.round(abs / ms);
      const label = `${n} ${unit}${n === 1 || unit === 'min' ? '' : 's'}`;
      return deltaMs < 0 ? `${label} ago` : `in ${label}`;
    }
  }
  return deltaMs < 0 ? 'just now' : 'in under a minute';
}

export function formatCount(n: number): string {
  return integer.format(n);
}

/** A cost in US dollars, "$0.018". */
export function formatUsd(n: number): string {
  return usd.format(n);
}

export function formatPercent(fraction: number): string {
  return percent.format(fraction);
}
