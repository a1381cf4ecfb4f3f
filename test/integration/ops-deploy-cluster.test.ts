// docker-compose.cluster.yml and config/docker-cluster.yaml, read (Docker does not run on the
// test machines): a six-node Redis Cluster joined once by an init container, and gateways whose
// config names those nodes, mounted where the image reads it (docs/operations.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-config.js';

const read = (path: string): string => readFileSync(join(process.cwd(), path), 'utf8');
const CONFIG_IN_CONTAINER = '/etc/agent-gateway/gateway.yaml';
const CONFIG_FILE = 'config/docker-cluster.yaml';

interface Service {
  image?: string;
  command?: string[];
  entrypoint?: string[];
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  networks?: string[] | Record<string, { ipv4_address?: string }>;
  stop_grace_period?: string;
}

const compose = parseYaml(read('docker-compose.cluster.yml'), { merge: true }) as {
  services: Record<string, Service>;
  networks: Record<string, { ipam: { config: Array<{ subnet: string }> } }>;
};
const services = compose.services;
const config = parseConfigText(read(CONFIG_FILE), CONFIG_FILE, { AGENTGW_ADMIN_TOKEN: 'a-token-of-at-least-16-characters' });
const nodeServices = Object.entries(services).filter(([, s]) => s.command?.[0] === 'redis-server');
const gateways = Object.entries(services).filter(([, s]) => s.command?.[0] === 'serve');
const init = services['redis-cluster-init']!;
const addressOf = (service: Service): string | undefined => (Array.isArray(service.networks) ? undefined : service.networks?.['redis-cluster']?.ipv4_address);

describe('docker-compose.cluster.yml', () => {
  it('runs six cluster-enabled Redis nodes with fixed addresses in the network subnet', () => {
    expect(nodeServices).toHaveLength(6);
    const subnet = compose.networks['redis-cluster']!.ipam.config[0]!.subnet;
    expect(subnet).toBe('172.28.0.0/24');
    for (const [name, service] of nodeServices) {
      expect(service.command!.join(' '), name).toContain('--cluster-enabled yes');
      expect(addressOf(service), name).toMatch(/^172\.28\.0\.\d+$/);
    }
    expect(new Set(nodeServices.map(([, s]) => addressOf(s))).size).toBe(6);
  });

  it('joins every node once, three masters with a replica each, after all are healthy', () => {
    const script = init.command!.join(' ');
    for (const [, service] of nodeServices) expect(script).toContain(`${addressOf(service)}:6379`);
    expect(script).toMatch(/--cluster-replicas 1 --cluster-yes/);
    // Skips the create when the cluster already answers: a second `up` must not fail.
    expect(script).toMatch(/cluster_state:ok \|\|/);
    for (const [name] of nodeServices) expect(init.depends_on?.[name]?.condition).toBe('service_healthy');
  });

  it('starts the gateways on the joined cluster with config/docker-cluster.yaml at the path the image reads', () => {
    expect(gateways.map(([name]) => name).sort()).toEqual(['gateway-1', 'gateway-2']);
    for (const [name, service] of gateways) {
      expect(service.command, name).toEqual(['serve', '--config', CONFIG_IN_CONTAINER]);
      expect(service.volumes, name).toContain(`./${CONFIG_FILE}:${CONFIG_IN_CONTAINER}:ro`);
      expect(service.depends_on?.['redis-cluster-init']?.condition, name).toBe('service_completed_successfully');
      expect(service.networks, name).toContain('redis-cluster');
      expect(Number.parseInt(service.stop_grace_period!, 10) * 1000).toBeGreaterThan(config.shutdownGraceMs);
    }
    // "${AGENTGW_PUBLISH_ADDRESS:-127.0.0.1}:8180:8080": the host port is the second part from the end.
    expect(gateways.map(([, s]) => s.ports![0]!.split(':').at(-2))).toEqual(['8180', '8182']);
    expect(gateways.map(([, s]) => s.ports![0]!.startsWith('${AGENTGW_PUBLISH_ADDRESS:-127.0.0.1}:'))).toEqual([true, true]);
  });

  it('serves HTTPS with a development certificate made at start by scripts/dev-cert.sh, none committed', () => {
    const cert = services['gateway-cert']!;
    expect(cert.command!.join(' ')).toContain('sh /scripts/dev-cert.sh /tls');
    expect(cert.volumes).toContain('./scripts/dev-cert.sh:/scripts/dev-cert.sh:ro');
    const tlsVolume = cert.volumes!.find((v) => v.endsWith(':/tls'))!.split(':')[0]!;
    const tls = config.listen.tls!;
    for (const [name, service] of gateways) {
      expect(service.depends_on?.['gateway-cert']?.condition, name).toBe('service_completed_successfully');
      const mount = service.volumes!.find((v) => v.startsWith(`${tlsVolume}:`))!;
      const dir = mount.split(':')[1]!;
      expect(tls.certFile.startsWith(`${dir}/`) && tls.keyFile.startsWith(`${dir}/`), name).toBe(true);
    }
    // The script writes server.pem / server.key, the names the config reads.
    expect([tls.certFile.split('/').at(-1), tls.keyFile.split('/').at(-1)]).toEqual(['server.pem', 'server.key']);
  });
});

describe('config/docker-cluster.yaml', () => {
  it('names compose nodes as cluster seeds and keeps keys, limits and audit in the cluster', () => {
    const redis = config.redis!;
    if (redis.mode !== 'cluster') throw new Error(`expected redis.mode cluster, got ${redis.mode}`);
    const addresses = new Set(nodeServices.map(([, s]) => addressOf(s)));
    expect(redis.nodes.length).toBeGreaterThanOrEqual(3);
    for (const node of redis.nodes) {
      expect(addresses.has(node.host), node.host).toBe(true);
      expect(node.port).toBe(6379);
    }
    expect(config.keys.store).toBe('redis');
    expect(config.audit.redisStream).toBeDefined();
    expect(config.audit.waitReplicas).toBeGreaterThanOrEqual(1);
    const upstream = new URL(config.agents.get('demo')!.upstream);
    expect(services[upstream.hostname]?.command?.[0]).toBe('demo-agent');
  });
});
