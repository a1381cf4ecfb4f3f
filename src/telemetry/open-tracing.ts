// Builds the tracing the config asks for (docs/observability.md "Configuration"): the
// official OpenTelemetry JS trace SDK with an OTLP/HTTP exporter behind a BatchSpanProcessor.
// Nothing is registered globally and nothing is patched: the pipeline holds the tracer
// itself. A collector that is down, slow or failing never holds a request: finished spans
// wait in a bounded queue, exports run off the request path, and what cannot be delivered
// is dropped and counted (agentgw_telemetry_dropped_total).
import { TraceIdRatioBasedSampler, BasicTracerProvider, BatchSpanProcessor, type BufferConfig } from '@opentelemetry/sdk-trace-base';
import type { MeterProvider } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TelemetryConfig } from '../config/telemetry-schema.js';
import type { Logger } from '../logger.js';
import { BoundedParentSampler } from './bounded-parent-sampler.js';
import { droppedSpansMeterProvider, LoggingSpanExporter } from './span-export-health.js';
import { RequestTracing } from './request-tracing.js';

/** Spans per export request; a full batch is sent at once rather than on the timer. */
const MAX_EXPORT_BATCH = 512;
/** How often a partial batch is sent. */
const EXPORT_INTERVAL_MS = 2_000;
/** One export request's deadline; the next batch waits at most this long behind a hanging collector. */
const EXPORT_TIMEOUT_MS = 10_000;
/** Longer attribute values (a client's session id, a runner's model or tool name) are cut to this. */
const MAX_ATTRIBUTE_CHARS = 1024;
/** At shutdown, queued spans get this long to reach the collector; a hanging one does not hold the exit longer. */
const SHUTDOWN_FLUSH_MS = 3_000;
/** Events per span: the first byte and the tool calls; a runner calling more tools is not recorded past it. */
const MAX_EVENTS = 128;

export interface OpenTracing {
  tracing: RequestTracing;
  /** Sends what is queued (bounded by the export deadline), then stops exporting. */
  shutdown(): Promise<void>;
}

/** Undefined when telemetry is off (no collector named). */
export function openTracing(config: TelemetryConfig, logger: Logger): OpenTracing | undefined {
  if (config.endpoint === undefined) return undefined;
  const exporter = new OTLPTraceExporter({ url: `${config.endpoint}/v1/traces`, headers: { ...config.headers }, timeoutMillis: EXPORT_TIMEOUT_MS });
  const processorOptions: BufferConfig & { selfObsMeterProvider: MeterProvider } = {
    maxQueueSize: config.maxQueue,
    maxExportBatchSize: Math.min(MAX_EXPORT_BATCH, config.maxQueue),
    scheduledDelayMillis: EXPORT_INTERVAL_MS,
    exportTimeoutMillis: EXPORT_TIMEOUT_MS + 1_000,
    // The SDK's own account of spans it dropped (queue full) or could not export.
    selfObsMeterProvider: droppedSpansMeterProvider(),
  };
  const provider = new BasicTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName })),
    // Parent-based, with a client's sampled flag trusted only up to parent_sampled_per_second.
    sampler: config.parentBased ? new BoundedParentSampler(config.sampleRatio, config.parentSampledPerSecond) : new TraceIdRatioBasedSampler(config.sampleRatio),
    spanLimits: { attributeValueLengthLimit: MAX_ATTRIBUTE_CHARS, eventCountLimit: MAX_EVENTS },
    spanProcessors: [new BatchSpanProcessor(new LoggingSpanExporter(exporter, logger, config.endpoint), processorOptions)],
  });
  const tracer = provider.getTracer('agent-gateway');
  logger.info({ otlp_endpoint: config.endpoint, sample_ratio: config.sampleRatio, parent_based: config.parentBased, parent_sampled_per_second: config.parentSampledPerSecond, service_name: config.serviceName }, 'tracing on');
  return {
    tracing: new RequestTracing(tracer, config.includeUserId),
    shutdown: () => boundedShutdown(provider, logger),
  };
}

async function boundedShutdown(provider: BasicTracerProvider, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), SHUTDOWN_FLUSH_MS);
  });
  try {
    const result = await Promise.race([provider.shutdown().then(() => 'flushed' as const), deadline]);
    if (result === 'timeout') logger.warn({ wait_ms: SHUTDOWN_FLUSH_MS }, 'telemetry: the collector did not take the last spans in time; they are dropped');
  } catch (err) {
    logger.warn({ err: { message: (err as Error).message } }, 'telemetry: spans left at shutdown could not be exported');
  } finally {
    clearTimeout(timer);
  }
}
