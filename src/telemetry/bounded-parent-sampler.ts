// Which requests are recorded (docs/observability.md "Sampling"). Parent-based, as the
// default has always been: a request whose `traceparent` says its trace is sampled is
// recorded, and a new trace by `sample_ratio`. But the flag is the client's to set, before
// any key is checked: any client, even without a key, could make every one of its requests
// recorded and exported. So a sampled parent is trusted only as far as
// `parent_sampled_per_second` (per instance, a token bucket with a second's burst): a trace
// the ratio would record anyway needs no allowance; past the allowance the request is decided
// by the ratio alone, as a new trace is (issue 45).
import { isSpanContextValid, trace, TraceFlags, type Attributes, type Context, type Link, type SpanKind } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler, type Sampler, type SamplingResult } from '@opentelemetry/sdk-trace-base';

const NOT_RECORDED: SamplingResult = { decision: SamplingDecision.NOT_RECORD };
const RECORDED: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };

export class BoundedParentSampler implements Sampler {
  private readonly ratio: TraceIdRatioBasedSampler;
  private readonly burst: number;
  private tokens: number;
  private refilledAtMs: number;

  constructor(
    sampleRatio: number,
    private readonly parentSampledPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.ratio = new TraceIdRatioBasedSampler(sampleRatio);
    this.burst = Math.max(1, parentSampledPerSecond);
    this.tokens = parentSampledPerSecond > 0 ? this.burst : 0;
    this.refilledAtMs = now();
  }

  shouldSample(context: Context, traceId: string, spanName: string, spanKind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    const parent = trace.getSpanContext(context);
    const byRatio = this.ratio.shouldSample(context, traceId);
    if (parent === undefined || !isSpanContextValid(parent)) return byRatio;
    // A parent that is not sampled: not recorded, as its service decided.
    if ((parent.traceFlags & TraceFlags.SAMPLED) === 0) return NOT_RECORDED;
    if (byRatio.decision === SamplingDecision.RECORD_AND_SAMPLED) return byRatio;
    return this.takeToken() ? RECORDED : NOT_RECORDED;
  }

  toString(): string {
    return `BoundedParentSampler{ratio=${this.ratio.toString()}, parentSampledPerSecond=${this.parentSampledPerSecond}}`;
  }

  private takeToken(): boolean {
    const nowMs = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.refilledAtMs) / 1000) * this.parentSampledPerSecond);
    this.refilledAtMs = nowMs;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
