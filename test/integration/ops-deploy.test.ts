// Docker does not run on the test machines, so the packaging is checked by reading it: the
// Dockerfile, docker-compose.yml, the config the containers use, Prometheus' scrape config
// and alert rules, and the Grafana dashboard must agree with each other and with the
// metrics the gateway really defines.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-config.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { registry } from '../../src/metrics/metrics.js';

const ROOT = process.cwd();
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const CONFIG_IN_CONTAINER = '/etc/agent-gateway/gateway.yaml';
const DOCKER_CONFIG = 'config/docker.yaml';

// ---- Dockerfile -------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let stage = -1;
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue;
    pending += (pending ? ' ' : '') + line.replace(/\\$/, '').trim();
    if (line.endsWith('\\')) continue;
    const [op, ...rest] = pending.split(/\s+/);
    pending = '';
    const upper = op!.toUpperCase();
    if (upper === 'FROM') stage++;
    instructions.push({ op: upper, args: rest.join(' '), stage });
  }
  return instructions;
}

/** The exec form `["a", "b"]` as an array; the shell form split on spaces. */
function execForm(args: string): string[] {
  return args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
}

const dockerfile = parseDockerfile(read('Dockerfile'));
// The admin token compose passes in from .env (test/integration/ops-compose.test.ts checks that wiring).
const dockerConfig: GatewayConfig = parseConfigText(read(DOCKER_CONFIG), DOCKER_CONFIG, { AGENTGW_ADMIN_TOKEN: 'a-token-of-at-least-16-characters' });
const lastStage = Math.max(...dockerfile.map((i) => i.stage));
const inStage = (stage: number, op: string) => dockerfile.filter((i) => i.stage === stage && i.op === op);


/** A compose `ports` entry, "[address:]host:container", where the address may be a ${VAR:-default}. */
function publishedPort(entry: string): { address: string | undefined; host: number; container: number } {
  const match = /^(?:(\$\{[^}]*\}|[0-9.]+):)?(\d+):(\d+)$/.exec(entry);
  if (match === null) throw new Error(`not a published port: ${entry}`);
  return { address: match[1], host: Number(match[2]), container: Number(match[3]) };
}

describe('Dockerfile', () => {
  it('is multi-stage: a build stage compiles, the runtime stage installs production dependencies only', () => {
    const froms = dockerfile.filter((i) => i.op === 'FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    expect(froms[0]!.args).toMatch(/\bAS build$/i);
    const buildRuns = inStage(0, 'RUN').map((i) => i.args);
    expect(buildRuns.some((run) => /\bnpm ci\b/.test(run) && !run.includes('--omit=dev'))).toBe(true);
    expect(buildRuns.some((run) => run.includes('tsc -p tsconfig.build.json'))).toBe(true);
    const runtimeRuns = inStage(lastStage, 'RUN').map((i) => i.args);
    expect(runtimeRuns.some((run) => /\bnpm ci --omit=dev\b/.test(run))).toBe(true);
    expect(inStage(lastStage, 'COPY').map((i) => i.args)).toContain('--from=build /app/dist ./dist');
    // Every stage's base image is on one Node line, and it is one of the LTS lines package.json's engines names.
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const lines = [...engines.matchAll(/\^(\d+)/g)].map((m) => Number(m[1]));
    const imageLines = new Set(froms.map((from) => Number(/\bnode:(\d+)[-.]/.exec(from.args)?.[1])));
    expect(imageLines.size, froms.map((f) => f.args).join(' / ')).toBe(1);
    expect(lines).toContain([...imageLines][0]);
  });

  it('installs from the lockfile with `npm ci` only, in the image and in .ci/run: no `npm install` fallback', () => {
    const installs = dockerfile.filter((i) => i.op === 'RUN' && /\bnpm (ci|install|i)\b/.test(i.args)).map((i) => i.args);
    expect(installs.length).toBeGreaterThanOrEqual(2);
    for (const run of installs) expect(run).not.toMatch(/\bnpm (install|i)\b/);
    const ci = read('.ci/run')
      .split('\n')
      .filter((l) => !l.trim().startsWith('#'))
      .join('\n');
    expect(ci).toMatch(/\bnpm ci\b/);
    expect(ci).not.toMatch(/\bnpm (install|i)\b/);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const copy of dockerfile.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const source of sources) {
        expect(existsSync(join(ROOT, source)), `COPY ${source}`).toBe(true);
        expect(ignored, `.dockerignore excludes ${source}`).not.toContain(source);
      }
    }
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'var', '.git']));
  });

  it('runs as a non-root user', () => {
    const users = inStage(lastStage, 'USER');
    expect(users).toHaveLength(1);
    expect(users[0]!.args).not.toMatch(/^(root|0)(:|$)/);
  });

  it('checks health on the admin listener /healthz and exposes the ports the container config uses', () => {
    const healthcheck = dockerfile.find((i) => i.op === 'HEALTHCHECK')!;
    expect(healthcheck.args).toContain(`http://127.0.0.1:${dockerConfig.admin.port}/healthz`);
    expect(['0.0.0.0', '127.0.0.1']).toContain(dockerConfig.admin.host);
    const exposed = inStage(lastStage, 'EXPOSE').flatMap((i) => i.args.split(/\s+/)).map(Number);
    expect(exposed).toEqual(expect.arrayContaining([dockerConfig.listen.port, dockerConfig.admin.port]));
  });

  it('starts `serve` with the config at the documented path', () => {
    const entrypoint = execForm(dockerfile.find((i) => i.op === 'ENTRYPOINT')!.args);
    expect(entrypoint).toEqual(['node', '/app/dist/cli/main.js']);
    const cmd = execForm(dockerfile.find((i) => i.op === 'CMD')!.args);
    expect(cmd).toEqual(['serve', '--config', CONFIG_IN_CONTAINER]);
  });
});

// ---- docker-compose.yml and config/docker.yaml -------------------------------------------

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  depends_on?: Record<string, unknown> | string[];
  stop_grace_period?: string;
  healthcheck?: { disable?: boolean };
}

const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
const gatewayServices = Object.entries(services).filter(([, s]) => s.command?.[0] === 'serve');

function mount(service: ComposeService, target: string): string | undefined {
  const volume = service.volumes?.find((v) => v.split(':')[1] === target);
  return volume?.split(':')[0];
}

function durationSeconds(text: string): number {
  const match = /^(\d+)(ms|s|m)$/.exec(text)!;
  return Number(match[1]) * { ms: 0.001, s: 1, m: 60 }[match[2] as 'ms' | 's' | 'm'];
}

describe('docker-compose.yml', () => {
  it('runs two gateway instances, Redis, the demo agent and Prometheus', () => {
    expect(gatewayServices.map(([name]) => name).sort()).toEqual(['gateway-1', 'gateway-2']);
    expect(services.redis?.image).toMatch(/^redis:/);
    expect(services['demo-agent']?.command?.[0]).toBe('demo-agent');
    expect(services.prometheus?.image).toMatch(/^prom\/prometheus:/);
    expect(existsSync(join(ROOT, services['gateway-1']!.build!, 'Dockerfile'))).toBe(true);
  });

  it('mounts config/docker.yaml at the path the image reads, read-only, into every gateway', () => {
    for (const [name, service] of gatewayServices) {
      expect(service.command, name).toEqual(['serve', '--config', CONFIG_IN_CONTAINER]);
      expect(service.volumes, name).toContain(`./${DOCKER_CONFIG}:${CONFIG_IN_CONTAINER}:ro`);
      expect(service.depends_on && Object.keys(service.depends_on as object), name).toEqual(expect.arrayContaining(['redis', 'demo-agent']));
      // docker stop must wait longer than the drain, or streams are cut instead of ended.
      expect(durationSeconds(service.stop_grace_period!), name).toBeGreaterThan(dockerConfig.shutdownGraceMs / 1000);
    }
    expect(existsSync(join(ROOT, DOCKER_CONFIG))).toBe(true);
  });

  it('publishes each gateway on its own host port, mapped to listen.port, and its admin port on loopback only', () => {
    const hostPorts = gatewayServices.map(([, s]) => {
      expect(s.ports).toHaveLength(2);
      const gatewayPort = publishedPort(s.ports![0]!);
      expect(gatewayPort.container).toBe(dockerConfig.listen.port);
      // The gateway's port on 127.0.0.1 unless .env names another address (AGENTGW_PUBLISH_ADDRESS).
      expect(gatewayPort.address).toBe('${AGENTGW_PUBLISH_ADDRESS:-127.0.0.1}');
      const adminPort = publishedPort(s.ports![1]!);
      expect([adminPort.address, adminPort.container]).toEqual(['127.0.0.1', dockerConfig.admin.port]);
      return gatewayPort.host;
    });
    expect(new Set(hostPorts).size).toBe(gatewayServices.length);
    for (const [, s] of gatewayServices) expect(s.expose).toEqual(expect.arrayContaining([String(dockerConfig.listen.port), String(dockerConfig.admin.port)]));
    const published = Object.values(services).flatMap((s) => (s.ports ?? []).map((p) => p.split(':').at(-2)));
    expect(new Set(published).size).toBe(published.length);
  });

  it('points the container config at the compose services: Redis, the demo agent, a shared key store and audit stream', () => {
    expect(dockerConfig.listen.host).toBe('0.0.0.0');
    expect(dockerConfig.admin.host).toBe('0.0.0.0');
    const redis = dockerConfig.redis!;
    if (redis.mode !== 'single') throw new Error(`expected redis.mode single, got ${redis.mode}`);
    const redisUrl = new URL(redis.url);
    expect(services[redisUrl.hostname]?.image).toMatch(/^redis:/);
    expect(redisUrl.port || '6379').toBe('6379');
    // Several instances share one set of keys and one audit stream.
    expect(dockerConfig.keys.store).toBe('redis');
    expect(dockerConfig.audit.redisStream).toBeTruthy();
    expect(dockerConfig.audit.spool.startsWith('/app/var/')).toBe(true);
    for (const agent of dockerConfig.agents.values()) {
      const url = new URL(agent.upstream);
      const runner = services[url.hostname];
      expect(runner?.command?.[0], agent.id).toBe('demo-agent');
      const args = runner!.command!;
      expect(args[args.indexOf('--port') + 1]).toBe(url.port);
      expect(args[args.indexOf('--host') + 1]).toBe('0.0.0.0');
      expect(runner!.expose).toContain(url.port);
      // The image's health check probes the gateway admin port; the runner has none.
      expect(runner!.healthcheck?.disable).toBe(true);
    }
  });
});

// ---- Prometheus ---------------------------------------------------------------------------

interface PrometheusConfig {
  rule_files: string[];
  scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
}

const prometheusService = services.prometheus!;
const prometheusConfigPath = prometheusService.command!.find((arg) => arg.startsWith('--config.file='))!.split('=')[1]!;

describe('deploy/prometheus.yml', () => {
  const source = mount(prometheusService, prometheusConfigPath);
  const prometheus = parseYaml(read(source!)) as PrometheusConfig;

  it('is the file compose mounts where Prometheus reads its config', () => {
    expect(source).toBe('./deploy/prometheus.yml');
  });

  it('scrapes /metrics on the admin port of every gateway instance', () => {
    const job = prometheus.scrape_configs.find((c) => c.job_name === 'agent-gateway')!;
    expect(job.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = job.static_configs.flatMap((c) => c.targets).sort();
    expect(targets).toEqual(gatewayServices.map(([name]) => `${name}:${dockerConfig.admin.port}`).sort());
  });

  it('loads rule files that compose mounts from deploy/', () => {
    expect(prometheus.rule_files.length).toBeGreaterThan(0);
    for (const ruleFile of prometheus.rule_files) {
      const ruleSource = mount(prometheusService, ruleFile);
      expect(ruleSource, ruleFile).toBe('./deploy/alert-rules.yml');
      expect(existsSync(join(ROOT, ruleSource!))).toBe(true);
    }
  });
});

// ---- metric references in alert rules and the dashboard -----------------------------------

interface MetricInfo {
  labels: Set<string>;
}

async function knownMetrics(): Promise<Map<string, MetricInfo>> {
  const known = new Map<string, MetricInfo>();
  // Labels Prometheus or the cluster mode adds to every series.
  const added = ['instance', 'job', 'worker'];
  for (const metric of await registry.getMetricsAsJSON()) {
    const labelNames = (registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
    const info = { labels: new Set([...labelNames, ...added]) };
    known.set(metric.name, info);
    if (String(metric.type) === 'histogram') {
      known.set(`${metric.name}_bucket`, { labels: new Set([...info.labels, 'le']) });
      known.set(`${metric.name}_count`, info);
      known.set(`${metric.name}_sum`, info);
    }
  }
  known.set('up', { labels: new Set(added) });
  return known;
}

/** Values a label may take, where the set is fixed by the code. */
const LABEL_VALUES: Record<string, string[]> = {
  status: ['1xx', '2xx', '3xx', '4xx', '5xx'],
  kind: ['connect', 'headers_timeout', 'idle_timeout', 'reset', 'max_duration', 'bad_response'],
  result: ['written', 'spooled', 'replayed', 'failed', 'hit', 'miss', 'negative_hit', 'stale_hit'],
  route: ['chat', 'chat/stream', 'none'],
  job: ['agent-gateway'],
};

/** Fails when `expr` names a metric, a label or a fixed label value the gateway does not have. */
function checkExpression(expr: string, known: Map<string, MetricInfo>, where: string): string[] {
  const names = [...expr.matchAll(/\b((?:agentgw|process|nodejs)_[a-z0-9_]+|up)\b\s*(\{[^}]*\})?/g)];
  const found: string[] = [];
  for (const [, name, selector] of names) {
    const info = known.get(name!);
    expect(info, `${where}: unknown metric ${name} in ${expr}`).toBeDefined();
    found.push(name!);
    for (const [, label, , value] of (selector ?? '').matchAll(/([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)) {
      expect(info!.labels.has(label!), `${where}: ${name} has no label ${label}`).toBe(true);
      const allowed = LABEL_VALUES[label!];
      if (!allowed || value!.startsWith('$')) continue;
      for (const alternative of value!.split('|')) expect(allowed, `${where}: ${label}="${alternative}"`).toContain(alternative);
    }
  }
  expect(found.length, `${where}: no metric in ${expr}`).toBeGreaterThan(0);
  return found;
}

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description?: string };
}

describe('deploy/alert-rules.yml', () => {
  const rules = (parseYaml(read('deploy/alert-rules.yml')) as { groups: { name: string; rules: AlertRule[] }[] }).groups.flatMap((g) => g.rules);

  it('alerts on a high 5xx ratio, unavailable upstreams, Redis errors, audit spooling, audit records set aside and a growing webhook outbox', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining(['AgentGatewayHigh5xxRatio', 'AgentGatewayUpstreamUnavailable', 'AgentGatewayRedisErrors', 'AgentGatewayAuditSpooling', 'AgentGatewayAuditRecordsSetAside', 'AgentGatewayWebhookOutboxGrowing']),
    );
    const byName = new Map(rules.map((r) => [r.alert, r.expr]));
    expect(byName.get('AgentGatewayHigh5xxRatio')).toMatch(/agentgw_requests_total\{status="5xx"\}/);
    expect(byName.get('AgentGatewayUpstreamUnavailable')).toContain('agentgw_upstream_errors_total');
    expect(byName.get('AgentGatewayRedisErrors')).toContain('agentgw_redis_errors_total');
    expect(byName.get('AgentGatewayAuditSpooling')).toMatch(/agentgw_audit_records_total\{result="spooled"\}/);
    expect(byName.get('AgentGatewayAuditRecordsSetAside')).toContain('agentgw_audit_set_aside_total');
    expect(byName.get('AgentGatewayWebhookOutboxGrowing')).toContain('agentgw_webhook_outbox_depth');
  });

  it('uses only metrics, labels and label values the gateway defines, and gives every rule a severity and summary', async () => {
    const known = await knownMetrics();
    for (const rule of rules) {
      checkExpression(rule.expr, known, rule.alert);
      expect(['critical', 'warning', 'info'], rule.alert).toContain(rule.labels.severity);
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      if (rule.for) expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
    }
  });
});

interface DashboardPanel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}

describe('deploy/grafana', () => {
  const dashboard = JSON.parse(read('deploy/grafana/dashboards/agent-gateway.json')) as { uid: string; title: string; panels: DashboardPanel[] };

  it('builds every panel on metrics the gateway defines, and covers every gateway metric', async () => {
    const known = await knownMetrics();
    const used = new Set<string>();
    expect(dashboard.uid).toBe('agent-gateway');
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!) for (const name of checkExpression(target.expr, known, panel.title)) used.add(name.replace(/_(bucket|count|sum)$/, ''));
    }
    const gatewayMetrics = [...known.keys()].filter((name) => name.startsWith('agentgw_') && !/_(bucket|count|sum)$/.test(name));
    expect(gatewayMetrics.filter((name) => !used.has(name))).toEqual([]);
  });

  it('is provisioned in compose with the compose Prometheus as its data source', () => {
    const grafana = services.grafana!;
    const provisioning = mount(grafana, '/etc/grafana/provisioning')!;
    const dashboards = parseYaml(read(join(provisioning, 'dashboards/agent-gateway.yml'))) as { providers: { options: { path: string } }[] };
    const dashboardsTarget = dashboards.providers[0]!.options.path;
    expect(mount(grafana, dashboardsTarget)).toBe('./deploy/grafana/dashboards');
    const datasources = parseYaml(read(join(provisioning, 'datasources/prometheus.yml'))) as { datasources: { type: string; url: string }[] };
    const url = new URL(datasources.datasources[0]!.url);
    expect(services[url.hostname]).toBe(prometheusService);
    expect(prometheusService.ports!.map((p) => String(publishedPort(p).container))).toContain(url.port);
  });
});

describe('documentation', () => {
  it('has docs/operations.md, linked from the README, covering the deployment files', () => {
    const operations = read('docs/operations.md');
    expect(read('README.md')).toContain('(docs/operations.md)');
    for (const mention of ['Dockerfile', 'docker-compose.yml', CONFIG_IN_CONTAINER, 'deploy/prometheus.yml', 'deploy/alert-rules.yml', 'deploy/grafana', '--workers', 'SIGHUP', 'SIGTERM', '/readyz']) {
      expect(operations, mention).toContain(mention);
    }
    // Every alert in the rules file is explained in the runbook section.
    const rules = (parseYaml(read('deploy/alert-rules.yml')) as { groups: { rules: AlertRule[] }[] }).groups.flatMap((g) => g.rules);
    for (const rule of rules) expect(operations, rule.alert).toContain(rule.alert);
  });
});
