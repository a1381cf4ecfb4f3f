// A client's `traceparent` sampled flag is trusted only up to parent_sampled_per_second
// (issue 45, "also seen"): any client, even without a key, sent the flag and had every request
// recorded and exported. The sampler the gateway installs, on the real OpenTelemetry API.
import { ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
import { BoundedParentSampler } from '../../../src/telemetry/bounded-parent-sampler.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

function withParent(flags: number) {
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: '00f067aa0ba902b7', traceFlags: flags, isRemote: true });
}

function recorded(sampler: BoundedParentSampler, flags: number | null): boolean {
  const context = flags === null ? ROOT_CONTEXT : withParent(flags);
  return sampler.shouldSample(context, TRACE, 'invoke_agent', SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED;
}

describe('BoundedParentSampler', () => {
  it('records at most parent_sampled_per_second requests a second for a sampled parent the ratio would not record', () => {
    let nowMs = 0;
    const sampler = new BoundedParentSampler(0, 5, () => nowMs);
    const burst = Array.from({ length: 100 }, () => recorded(sampler, TraceFlags.SAMPLED));
    expect(burst.filter(Boolean)).toHaveLength(5);
    // The allowance comes back with time, never beyond a second's worth.
    nowMs += 400;
    expect(Array.from({ length: 10 }, () => recorded(sampler, TraceFlags.SAMPLED)).filter(Boolean)).toHaveLength(2);
    nowMs += 60_000;
    expect(Array.from({ length: 100 }, () => recorded(sampler, TraceFlags.SAMPLED)).filter(Boolean)).toHaveLength(5);
  });

  it('needs no allowance where the ratio records anyway; an unsampled parent is not recorded; 0 trusts no flag', () => {
    const always = new BoundedParentSampler(1, 0);
    expect(Array.from({ length: 50 }, () => recorded(always, TraceFlags.SAMPLED)).every(Boolean)).toBe(true);
    expect(recorded(always, TraceFlags.NONE)).toBe(false);
    expect(recorded(always, null)).toBe(true);
    const never = new BoundedParentSampler(0, 0);
    expect(recorded(never, TraceFlags.SAMPLED)).toBe(false);
    expect(recorded(never, null)).toBe(false);
  });

  it('is configured by telemetry.parent_sampled_per_second, 10 by default', () => {
    const base = 'agents:\n  a:\n    upstream: http://127.0.0.1:1/api/v1\ntelemetry:\n  otlp_endpoint: http://127.0.0.1:4318\n';
    expect(parseConfigText(base, 't.yaml', {}).telemetry.parentSampledPerSecond).toBe(10);
    expect(parseConfigText(`${base}  parent_sampled_per_second: 0\n`, 't.yaml', {}).telemetry.parentSampledPerSecond).toBe(0);
  });
});
