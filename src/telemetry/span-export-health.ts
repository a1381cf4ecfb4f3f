// How span export is doing, told to the operator: spans the SDK drops or cannot deliver are
// counted in agentgw_telemetry_dropped_total, and a collector outage is logged once when it
// starts and once when it ends (not once per failed export).
import { createNoopMeter, type Counter, type Meter, type MeterProvider } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';

/**
 * The counter the BatchSpanProcessor reports every finished span to (the OpenTelemetry SDK
 * self-observability metric), with `error.type` set for the ones it gave up on: "queue_full"
 * when the queue was full, else the export's error. Only those reach our counter.
 */
const PROCESSED_SPANS = 'otel.sdk.processor.span.processed';

/** A MeterProvider for the span processor's own metrics that keeps only its dropped spans. */
export function droppedSpansMeterProvider(): MeterProvider {
  const noop = createNoopMeter();
  const dropped: Counter = {
    add(count, attributes) {
      const errorType = attributes?.['error.type'];
      if (errorType === undefined || count <= 0) return;
      metrics.telemetryDropped.inc({ reason: errorType === 'queue_full' ? 'queue_full' : 'export_failed' }, count);
    },
  };
  const meter: Meter = Object.assign(Object.create(noop) as Meter, {
    createCounter: (name: string) => (name === PROCESSED_SPANS ? dropped : noop.createCounter(name)),
  });
  return { getMeter: () => meter };
}

/** The OTLP exporter, with a log line when exports start failing and when they work again. */
export class LoggingSpanExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly logger: Logger,
    /** For the log: the collector's base URL (it holds no credentials; the schema refuses them). */
    private readonly endpoint: string,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code === ExportResultCode.SUCCESS) {
        if (this.failing) {
          this.failing = false;
          this.logger.info({ otlp_endpoint: this.endpoint }, 'telemetry collector answering again; exporting spans');
        }
      } else if (!this.failing) {
        this.failing = true;
        this.logger.warn(
          { otlp_endpoint: this.endpoint, err: { message: result.error?.message ?? 'export failed' } },
          'telemetry export failed; spans are dropped and counted in agentgw_telemetry_dropped_total until the collector answers',
        );
      }
      resultCallback(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
