// deploy/kubernetes/: the base and the Redis Sentinel overlay render (kubectl kustomize where
// kubectl is installed, else the JS renderer of test/helpers/kustomize.ts; with kubectl, both,
// compared), every object validates against the Kubernetes JSON schemas (kubernetes-models and
// @kubernetes-models/prometheus-operator for the ServiceMonitor CRD, decision 0041), and the
// objects agree with each other and with the gateway: probes on /readyz and /healthz, a
// termination grace above shutdown_grace, non-root, read-only root with var/ writable, a
// config the gateway accepts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-config.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { byIdentity, kubectlAvailable, renderKustomizationInJs, renderKustomizationWithKubectl, type KubeObject } from '../helpers/kustomize.js';

const ROOT = join(process.cwd(), 'deploy/kubernetes');
const KUSTOMIZATIONS = { base: join(ROOT, 'base'), 'redis-sentinel overlay': join(ROOT, 'overlays/redis-sentinel') };
const KUBECTL = kubectlAvailable();
const RENDERER = KUBECTL ? 'kubectl kustomize (and the JS renderer, compared)' : 'the JS renderer (kubectl is not installed)';

/** A model class per apiVersion and kind: its validate() checks the object against the schema. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

function render(dir: string): KubeObject[] {
  return KUBECTL ? renderKustomizationWithKubectl(dir) : renderKustomizationInJs(dir);
}

function schemaProblems(object: KubeObject): string | undefined {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) return `no schema for ${object.apiVersion} ${object.kind}`;
  try {
    new Model(object as never).validate();
    return undefined;
  } catch (error) {
    const details = (error as { errors?: { instancePath: string; message?: string }[] }).errors?.map((e) => `${e.instancePath} ${e.message}`).join('; ');
    return `${object.kind} ${object.metadata.name}: ${details ?? String(error)}`;
  }
}

// The parts of the objects the checks read.
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; runAsNonRoot?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
  volumes?: { name: string; emptyDir?: object; configMap?: { name: string } }[];
}
const specOf = <T>(o: KubeObject) => o.spec as T;

describe.each(Object.entries(KUSTOMIZATIONS))(`deploy/kubernetes, %s (rendered with ${RENDERER})`, (_name, dir) => {
  const objects = render(dir);
  const one = (kind: string) => {
    const found = objects.filter((o) => o.kind === kind);
    expect(found.map((o) => o.metadata.name), kind).toHaveLength(1);
    return found[0]!;
  };

  it('renders exactly the objects the gateway needs, one of each (and, with kubectl, the JS renderer agrees)', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'NetworkPolicy', 'PodDisruptionBudget', 'Secret', 'Service', 'ServiceMonitor']);
    process.stdout.write(`ops-kubernetes: ${dir} rendered with ${RENDERER}\n`);
    // The fallback CI may use without kubectl renders what kubectl renders.
    if (KUBECTL) expect(byIdentity(renderKustomizationInJs(dir))).toEqual(byIdentity(objects));
  });

  it('validates every object against the Kubernetes JSON schemas (the ServiceMonitor against the prometheus-operator CRD)', () => {
    expect(objects.map(schemaProblems).filter(Boolean)).toEqual([]);
  });

  const configMap = one('ConfigMap');
  const deployment = one('Deployment');
  const pod = specOf<{ template: { metadata: { labels: Record<string, string> }; spec: PodSpec } }>(deployment).template;
  const container = pod.spec.containers[0]!;
  const mountedAt = (name: string) => container.volumeMounts?.find((m) => m.name === name)?.mountPath;
  const configVolume = pod.spec.volumes!.find((v) => v.configMap?.name === configMap.metadata.name)!;
  const configPath = `${mountedAt(configVolume.name)}/gateway.yaml`;
  const configText = (configMap.data as Record<string, string>)['gateway.yaml']!;
  const config: GatewayConfig = parseConfigText(configText, `${configMap.metadata.name}/gateway.yaml`, { AGENTGW_ADMIN_TOKEN: 'a-token-of-at-least-16-characters' });

  it('runs serve with the ConfigMap config, which the gateway accepts, on Redis shared by every replica', () => {
    expect(container.args).toEqual(['serve', '--config', configPath]);
    expect(config.redis).toBeDefined();
    expect(config.keys.store).toBe('redis');
    expect(config.audit.redisStream).toBeTruthy();
    expect(config.listen.host).toBe('0.0.0.0');
    expect(config.admin.host).toBe('0.0.0.0');
    const ports = Object.fromEntries(container.ports!.map((p) => [p.name, p.containerPort]));
    expect(ports).toEqual({ http: config.listen.port, admin: config.admin.port });
  });

  it('probes readiness on /readyz and liveness on /healthz, on the admin listener', () => {
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'admin' });
    expect(container.startupProbe?.httpGet?.path).toBe('/healthz');
  });

  it("gives a stopping pod longer than its preStop pause plus the config's shutdown_grace", () => {
    const preStop = container.lifecycle?.preStop?.exec?.command;
    const pauseSeconds = preStop?.[0] === 'sleep' ? Number(preStop[1]) : 0;
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(pauseSeconds + config.shutdownGraceMs / 1000);
  });

  it('runs as non-root with a read-only root filesystem, var/ and /tmp on emptyDirs, resource requests, no API token', () => {
    expect(pod.spec.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.spec.securityContext?.runAsUser).not.toBe(0);
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    const emptyDirs = new Set(pod.spec.volumes!.filter((v) => v.emptyDir).map((v) => v.name));
    const writable = container.volumeMounts!.filter((m) => emptyDirs.has(m.name)).map((m) => m.mountPath);
    expect(writable.sort()).toEqual(['/app/var', '/tmp']);
    // Every file the gateway writes is under a writable mount.
    for (const file of [config.audit.spool, config.audit.file, config.keys.store === 'file' ? config.keys.file : undefined].filter(Boolean) as string[]) {
      expect(writable.some((dir) => file.startsWith(`${dir}/`)), file).toBe(true);
    }
    expect(container.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(pod.spec.automountServiceAccountToken).toBe(false);
  });

  it('takes the admin token from the Secret, which holds no value in git', () => {
    const secret = one('Secret');
    const ref = container.env!.find((e) => e.name === 'AGENTGW_ADMIN_TOKEN')?.valueFrom?.secretKeyRef;
    expect(ref).toEqual({ name: secret.metadata.name, key: 'AGENTGW_ADMIN_TOKEN' });
    expect(secret.data ?? secret.stringData).toBeUndefined();
    expect(config.admin.tokens.map((t) => t.role)).toEqual(['admin']);
    expect(configText).toContain('${AGENTGW_ADMIN_TOKEN}');
  });

  it('points the Service, HPA, PDB, NetworkPolicy and ServiceMonitor at the Deployment and its ports', () => {
    const labels = pod.metadata.labels;
    const matches = (selector: Record<string, string> | undefined) => selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect(matches(specOf<{ selector: { matchLabels: Record<string, string> } }>(deployment).selector.matchLabels)).toBe(true);

    const service = one('Service');
    const servicePorts = specOf<{ selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] }>(service);
    expect(matches(servicePorts.selector)).toBe(true);
    expect(servicePorts.ports.map((p) => [p.name, p.targetPort]).sort()).toEqual([['admin', 'admin'], ['http', 'http']]);

    const hpa = specOf<{ scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number }>(one('HorizontalPodAutoscaler'));
    expect(hpa.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.maxReplicas).toBeGreaterThan(hpa.minReplicas);
    // The HPA owns the replica count; a `replicas` here would reset it on every apply.
    expect(specOf<{ replicas?: number }>(deployment).replicas).toBeUndefined();

    const pdb = specOf<{ selector: { matchLabels: Record<string, string> }; minAvailable?: number; maxUnavailable?: number }>(one('PodDisruptionBudget'));
    expect(matches(pdb.selector.matchLabels)).toBe(true);
    expect(pdb.minAvailable).toBeLessThan(hpa.minReplicas);

    const policy = specOf<{ podSelector: { matchLabels: Record<string, string> }; ingress: { from?: unknown[]; ports: { port: number }[] }[] }>(one('NetworkPolicy'));
    expect(matches(policy.podSelector.matchLabels)).toBe(true);
    const open = policy.ingress.filter((rule) => rule.from === undefined).flatMap((rule) => rule.ports.map((p) => p.port));
    const restricted = policy.ingress.filter((rule) => rule.from !== undefined).flatMap((rule) => rule.ports.map((p) => p.port));
    expect(open).toEqual([config.listen.port]);
    expect(restricted).toEqual([config.admin.port]);

    const monitor = specOf<{ selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] }>(one('ServiceMonitor'));
    expect(Object.entries(monitor.selector.matchLabels).every(([k, v]) => service.metadata.labels?.[k] === v)).toBe(true);
    expect(monitor.endpoints).toEqual([expect.objectContaining({ port: 'admin', path: '/metrics' })]);
  });
});

describe('the Redis Sentinel overlay', () => {
  it('changes only the config, to Redis Sentinel (sentinels and the master name)', () => {
    const base = byIdentity(render(KUSTOMIZATIONS.base));
    const overlay = byIdentity(render(KUSTOMIZATIONS['redis-sentinel overlay']));
    const differing = overlay.filter((o, i) => JSON.stringify(o) !== JSON.stringify(base[i])).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(differing).toEqual(['ConfigMap/agent-gateway-config']);
    const configMap = overlay.find((o) => o.kind === 'ConfigMap')!;
    const config = parseConfigText((configMap.data as Record<string, string>)['gateway.yaml']!, 'overlay', { AGENTGW_ADMIN_TOKEN: 'a-token-of-at-least-16-characters' });
    expect(config.redis?.mode).toBe('sentinel');
    if (config.redis?.mode === 'sentinel') {
      expect(config.redis.sentinels.length).toBeGreaterThan(0);
      expect(config.redis.name).toBeTruthy();
    }
  });
});

describe('the JS renderer', () => {
  it('refuses what it does not implement instead of rendering it wrong', async () => {
    const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-kustomize-'));
    try {
      await writeFile(join(dir, 'kustomization.yaml'), 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: gateways\nresources: []\n');
      expect(() => renderKustomizationInJs(dir)).toThrow(/namespace not supported by the JS renderer/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('docs/kubernetes.md', () => {
  const docs = readFileSync(join(process.cwd(), 'docs/kubernetes.md'), 'utf8');

  it('uses what kubectl carries, never a standalone kustomize binary', () => {
    const commands = [...docs.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((block) => block[1]!.split('\n'));
    expect(commands.join('\n')).not.toMatch(/(^|[;&|]\s*|\bcd [^&]+&&\s*)kustomize /m);
    expect(docs).not.toMatch(/`kustomize (edit|build)/);
    expect(docs).toContain('kubectl apply -k my-overlay');
    expect(docs).toContain('kubectl kustomize my-overlay');
  });

  it("sets the image in the overlay's images: by the name the base's Deployment uses", () => {
    // The example sits in a list item: its lines are indented like its fence.
    const block = /^( *)```yaml\n( *# my-overlay\/kustomization\.yaml[\s\S]*?)\n *```/m.exec(docs);
    expect(block, 'the overlay example').not.toBeNull();
    const text = block![2]!.split('\n').map((line) => line.slice(block![1]!.length)).join('\n');
    const overlay = parseYaml(text) as { images: { name: string; newName: string; newTag: string }[] };
    const deployment = parseYaml(readFileSync(join(ROOT, 'base/deployment.yaml'), 'utf8')) as { spec: { template: { spec: { containers: { image: string }[] } } } };
    const baseImage = deployment.spec.template.spec.containers[0]!.image;
    expect(baseImage.split(':')[0]).toBe(overlay.images[0]!.name);
    expect(overlay.images[0]).toMatchObject({ newName: expect.stringContaining('/agent-gateway'), newTag: expect.any(String) });
  });
});
