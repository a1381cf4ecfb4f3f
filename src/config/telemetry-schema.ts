// The telemetry block (docs/observability.md "Configuration"): OpenTelemetry traces over
// OTLP/HTTP. Off unless a collector is named, in the file or by OTEL_EXPORTER_OTLP_ENDPOINT.
// The file wins over the standard OTEL_* variables for every key it sets; the variables fill
// what it leaves out (OpenTelemetry's own rule: explicit configuration beats the
// environment), and OTEL_SDK_DISABLED=true turns tracing off whatever the file says
// (docs/decisions/0053-traces-off-by-default-file-over-env.md).
import { z } from 'zod';

const collectorUrl = z.string().refine((text) => {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}, { message: 'must be the collector\'s http:// or https:// base URL without credentials, query or fragment, e.g. http://127.0.0.1:4318 (traces go to its /v1/traces; credentials go in telemetry.headers)' });

/** A header name as HTTP allows it (a token); values may not hold line breaks. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const telemetrySchema = z
  .strictObject({
    // The collector's base URL; unset (and no OTEL_EXPORTER_OTLP_ENDPOINT): tracing is off.
    otlp_endpoint: collectorUrl.optional(),
    // Sent with every export, e.g. a collector's API key.
    headers: z
      .record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string().regex(/^[^\r\n]*$/, 'must not contain a line break'))
      .default({}),
    // The share of new traces recorded; a request that continues a trace follows its parent's decision.
    sample_ratio: z.number().min(0).max(1).default(1),
    // Whether the sampler follows a client's sampled flag (parent-based); only OTEL_TRACES_SAMPLER turns it off.
    parent_based: z.boolean().default(true),
    // A client's sampled flag is its own to set, before any key is checked: how many requests a
    // second (per instance) it may have recorded beyond sample_ratio; 0: never (the ratio decides).
    parent_sampled_per_second: z.number().min(0).max(100_000).default(10),
    service_name: z.string().min(1).max(256).default('agent-gateway'),
    // context.user_id is personal data: exported only when asked for.
    include_user_id: z.boolean().default(false),
    // Finished spans waiting for export; past it spans are dropped and counted (agentgw_telemetry_dropped_total).
    max_queue: z.number().int().min(1).max(1_000_000).default(2048),
  })
  .transform((t) => ({
    /** Undefined: tracing is off. */
    endpoint: t.otlp_endpoint?.replace(/\/+$/, ''),
    headers: t.headers,
    sampleRatio: t.sample_ratio,
    parentBased: t.parent_based,
    parentSampledPerSecond: t.parent_sampled_per_second,
    serviceName: t.service_name,
    includeUserId: t.include_user_id,
    maxQueue: t.max_queue,
  }));

export type TelemetryConfig = z.output<typeof telemetrySchema>;

/** OTEL_TRACES_SAMPLER values and what they mean here: the root ratio (null: OTEL_TRACES_SAMPLER_ARG, default 1) and parent-based. */
const SAMPLERS: Record<string, { ratio: number | null; parentBased: boolean }> = {
  always_on: { ratio: 1, parentBased: false },
  always_off: { ratio: 0, parentBased: false },
  traceidratio: { ratio: null, parentBased: false },
  parentbased_always_on: { ratio: 1, parentBased: true },
  parentbased_always_off: { ratio: 0, parentBased: true },
  parentbased_traceidratio: { ratio: null, parentBased: true },
};

/**
 * The telemetry block with the standard OTEL_* variables filling what the file leaves unset
 * (docs/observability.md "Configuration"). What the variables hold is then checked by the
 * schema like the file's; a sampler the gateway does not know is a problem of its own,
 * named after its variable.
 */
export function telemetryWithEnv(fromFile: unknown, env: NodeJS.ProcessEnv): { block: unknown; problems: string[] } {
  // Not a mapping: left as it is for the schema to report.
  if (fromFile !== undefined && (fromFile === null || typeof fromFile !== 'object' || Array.isArray(fromFile))) return { block: fromFile, problems: [] };
  const block: Record<string, unknown> = { ...(fromFile as Record<string, unknown> | undefined) };
  const problems: string[] = [];
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    delete block.otlp_endpoint;
    return { block, problems };
  }
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (block.otlp_endpoint === undefined && endpoint) block.otlp_endpoint = endpoint;
  const serviceName = env.OTEL_SERVICE_NAME?.trim();
  if (block.service_name === undefined && serviceName) block.service_name = serviceName;
  if (block.headers === undefined && env.OTEL_EXPORTER_OTLP_HEADERS?.trim()) block.headers = parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS);
  const samplerName = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (block.sample_ratio === undefined && block.parent_based === undefined && samplerName) {
    const sampler = SAMPLERS[samplerName];
    if (sampler === undefined) {
      problems.push(`OTEL_TRACES_SAMPLER: "${samplerName.slice(0, 64)}" is not one of ${Object.keys(SAMPLERS).join(', ')}`);
    } else {
      const argument = env.OTEL_TRACES_SAMPLER_ARG?.trim();
      const ratio = sampler.ratio ?? (argument ? Number(argument) : 1);
      if (!(ratio >= 0 && ratio <= 1)) problems.push(`OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1, got "${(argument ?? '').slice(0, 64)}"`);
      block.sample_ratio = ratio;
      block.parent_based = sampler.parentBased;
    }
  }
  return { block, problems };
}

/** `key1=value1,key2=value2` with percent-encoded values (the OTLP exporter variables' format). */
function parseOtlpHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    let value = pair.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // Kept as written: the schema then checks it like any other value.
    }
    headers[pair.slice(0, at).trim()] = value;
  }
  return headers;
}
