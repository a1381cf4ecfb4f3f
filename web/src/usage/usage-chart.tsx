// A uPlot time chart of usage series as stacked bars, one bar per period. Hovering shows each
// series' own value for that period in the legend under the chart; the numbers are also in
// the table beside it, and the chart's label states the total for screen readers.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { formatCount, formatUsd } from '../format.js';
import type { Granularity } from '../types.js';
import { stackFromTop, type Series } from './usage-series.js';

export const SERIES_COLORS = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2'];

const hourLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const dayLabel = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

function periodLabel(seconds: number, granularity: Granularity): string {
  return granularity === 'hour' ? hourLabel.format(seconds * 1000) : dayLabel.format(seconds * 1000);
}

/** How the chart writes its values: whole counts (ticks between integers left blank), or dollars. */
export type ValueFormat = 'count' | 'usd';

function options(series: Series[], granularity: Granularity, width: number, unit: string, format: ValueFormat): uPlot.Options {
  const axisValue = format === 'usd' ? formatUsd : (t: number) => (Number.isInteger(t) ? formatCount(t) : '');
  const pointValue = format === 'usd' ? (n: number) => formatUsd(n) : (n: number) => `${formatCount(n)} ${unit}`;
  const halfStepSeconds = granularity === 'hour' ? 1800 : 43_200;
  const bars = uPlot.paths.bars!({ size: [0.7, 48] });
  return {
    width,
    height: 260,
    legend: { live: true },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    // Half a period of room at each end, so the first and last bars are drawn whole.
    scales: { x: { time: true, range: (_u, min, max) => [min - halfStepSeconds, max + halfStepSeconds] }, y: { range: (_u, _min, max) => [0, max > 0 ? (format === 'usd' ? max * 1.15 : Math.ceil(max * 1.15)) : 1] } },
    axes: [
      { stroke: '#475569', grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1' } },
      { stroke: '#475569', grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1' }, size: 56, values: (_u, ticks) => ticks.map(axisValue) },
    ],
    series: [
      { label: granularity === 'hour' ? 'Hour' : 'Day (UTC)', value: (_u, v) => (v == null ? '—' : periodLabel(v, granularity)) },
      ...series.map((s, k) => {
        const color = SERIES_COLORS[k % SERIES_COLORS.length]!;
        return {
          label: s.label,
          stroke: color,
          width: 0,
          fill: color,
          paths: bars,
          points: { show: false },
          // The series' own value, not its stack height.
          value: (_u: uPlot, _v: number | null, _s: number, i: number | null) => (i == null ? '—' : pointValue(s.values[i] ?? 0)),
        };
      }),
    ],
  };
}

export function UsageChart(props: { periodsMs: number[]; series: Series[]; granularity: Granularity; unit: string; label: string; format?: ValueFormat }) {
  const format = props.format ?? 'count';
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current!;
    const data: uPlot.AlignedData = [props.periodsMs.map((t) => t / 1000), ...stackFromTop(props.series)];
    const plot = new uPlot(options(props.series, props.granularity, Math.max(320, element.clientWidth), props.unit, format), data, element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(320, element.clientWidth), height: 260 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [props.periodsMs, props.series, props.granularity, props.unit, format]);
  return <div class="chart" ref={container} role="img" aria-label={props.label} data-testid="usage-chart" />;
}
