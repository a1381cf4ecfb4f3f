// The telemetry block and audit.postgres (docs/observability.md "Configuration", docs/audit.md
// "PostgreSQL"): defaults, what each refuses and why, and how the standard OTEL_* variables
// fill what the file leaves unset (the file wins; OTEL_SDK_DISABLED turns tracing off).
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
import { configProblems as problems, MINIMAL_CONFIG as MINIMAL } from '../../helpers/config-problems.js';

const telemetryOf = (text: string, env: NodeJS.ProcessEnv = {}) => parseConfigText(text, 'test.yaml', env).telemetry;

describe('telemetry config', () => {
  it('is off by default, with documented defaults', () => {
    expect(telemetryOf(MINIMAL)).toEqual({ endpoint: undefined, headers: {}, sampleRatio: 1, parentBased: true, parentSampledPerSecond: 10, serviceName: 'agent-gateway', includeUserId: false, maxQueue: 2048 });
  });

  it('takes the collector, its headers, the ratio and the service name from the file', () => {
    const text = `${MINIMAL}telemetry:\n  otlp_endpoint: http://collector:4318/\n  headers: { x-api-key: abc }\n  sample_ratio: 0.25\n  service_name: edge\n  include_user_id: true\n  max_queue: 100\n`;
    expect(telemetryOf(text)).toEqual({ endpoint: 'http://collector:4318', headers: { 'x-api-key': 'abc' }, sampleRatio: 0.25, parentBased: true, parentSampledPerSecond: 10, serviceName: 'edge', includeUserId: true, maxQueue: 100 });
  });

  it('refuses a collector URL with credentials or a query, a ratio outside 0..1, a header that could split lines', () => {
    expect(problems(`${MINIMAL}telemetry: { otlp_endpoint: "http://user:pw@collector:4318" }\n`)).toEqual([expect.stringMatching(/^telemetry\.otlp_endpoint: .*without credentials/)]);
    expect(problems(`${MINIMAL}telemetry: { otlp_endpoint: "http://collector:4318/?a=1" }\n`)).toEqual([expect.stringMatching(/^telemetry\.otlp_endpoint: /)]);
    expect(problems(`${MINIMAL}telemetry: { sample_ratio: 1.5 }\n`)).toEqual([expect.stringMatching(/^telemetry\.sample_ratio: /)]);
    expect(problems(`${MINIMAL}telemetry: { headers: { "bad name": x } }\n`)[0]).toMatch(/^telemetry\.headers/);
    expect(problems(`${MINIMAL}telemetry: { headers: { x-a: "one\\r\\nx-b: two" } }\n`)).toEqual([expect.stringMatching(/^telemetry\.headers\.x-a: must not contain a line break/)]);
    expect(problems(`${MINIMAL}telemetry: { collector: http://c:4318 }\n`)).toEqual(['telemetry: unknown key "collector"']);
  });

  it('takes the OTEL_* variables for what the file leaves unset, and the file over them', () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env-collector:4318',
      OTEL_SERVICE_NAME: 'from-env',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20t0ken,x-tenant=a',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    };
    expect(telemetryOf(MINIMAL, env)).toMatchObject({ endpoint: 'http://env-collector:4318', serviceName: 'from-env', headers: { authorization: 'Bearer t0ken', 'x-tenant': 'a' }, sampleRatio: 0.1, parentBased: true });
    const file = `${MINIMAL}telemetry: { otlp_endpoint: "http://file-collector:4318", service_name: from-file, sample_ratio: 0.5 }\n`;
    expect(telemetryOf(file, env)).toMatchObject({ endpoint: 'http://file-collector:4318', serviceName: 'from-file', sampleRatio: 0.5, parentBased: true });
    expect(telemetryOf(MINIMAL, { ...env, OTEL_TRACES_SAMPLER: 'always_off' })).toMatchObject({ sampleRatio: 0, parentBased: false });
    expect(telemetryOf(MINIMAL, { ...env, OTEL_TRACES_SAMPLER: 'traceidratio' })).toMatchObject({ sampleRatio: 0.1, parentBased: false });
  });

  it('turns tracing off with OTEL_SDK_DISABLED=true, whatever the file says', () => {
    expect(telemetryOf(`${MINIMAL}telemetry: { otlp_endpoint: "http://c:4318" }\n`, { OTEL_SDK_DISABLED: 'true' }).endpoint).toBeUndefined();
  });

  it('names a sampler it does not know, or a bad ratio argument, by its variable', () => {
    expect(problems(MINIMAL, { OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toEqual([expect.stringMatching(/^OTEL_TRACES_SAMPLER: "jaeger_remote" is not one of always_on, /)]);
    expect(problems(MINIMAL, { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' })).toEqual([expect.stringMatching(/^OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/)]);
  });
});

describe('audit.postgres config', () => {
  it('defaults the table, the pool and the timeout', () => {
    const config = parseConfigText(`${MINIMAL}audit: { postgres: { url: "postgres://agentgw@db:5432/agentgw?sslmode=verify-full" } }\n`, 'test.yaml', {});
    expect(config.audit.postgres).toEqual({ url: 'postgres://agentgw@db:5432/agentgw?sslmode=verify-full', table: 'agentgw_audit', maxConnections: 2, timeoutMs: 10_000 });
    // Beside the default file sink, which usage reports and `audit tail` read.
    expect(config.audit.file).toBe('var/audit.jsonl');
  });

  it('refuses another scheme and a table name that is not a plain lower-case identifier', () => {
    expect(problems(`${MINIMAL}audit: { postgres: { url: "mysql://db/x" } }\n`)).toEqual([expect.stringMatching(/^audit\.postgres\.url: must be a postgres:\/\//)]);
    for (const table of ['Audit', 'audit; DROP TABLE x', 'a"b', 'one.two.three', `t${'x'.repeat(40)}`]) {
      expect(problems(`${MINIMAL}audit: { postgres: { url: "postgres://db/x", table: ${JSON.stringify(table)} } }\n`)).toEqual([expect.stringMatching(/^audit\.postgres\.table: must be a lower-case table name/)]);
    }
    expect(parseConfigText(`${MINIMAL}audit: { postgres: { url: "postgres://db/x", table: usage.requests } }\n`, 'test.yaml', {}).audit.postgres?.table).toBe('usage.requests');
  });
});
