// Renders a kustomization into its objects: with `kubectl kustomize` when kubectl is installed
// (it renders local directories offline), else with the small renderer below, which does what
// deploy/kubernetes/ uses and refuses anything else by name (so a new feature in the
// manifests fails here instead of rendering wrong): `resources` (files and directories) and
// `patches` with a `path` to a strategic-merge patch of maps (a list in a patch replaces the
// list; lists merged by key are not supported). The test renders with both where it can and
// compares them.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

const SUPPORTED_KEYS = new Set(['apiVersion', 'kind', 'resources', 'patches']);

function parseObjects(text: string, source: string): KubeObject[] {
  return parseAllDocuments(text).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${source}: ${document.errors[0]!.message}`);
    const value = document.toJS() as KubeObject | null;
    return value === null ? [] : [value];
  });
}

const isMapping = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A strategic-merge patch of maps: maps merge key by key, `null` deletes, anything else (lists too) replaces. */
function mergePatch(target: unknown, patch: unknown, where: string): unknown {
  if (!isMapping(patch)) return patch;
  if (Object.keys(patch).some((key) => key.startsWith('$'))) throw new Error(`${where}: strategic-merge directives (${Object.keys(patch).join(', ')}) are not supported by this renderer`);
  const out: Record<string, unknown> = isMapping(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value, `${where}.${key}`);
  }
  return out;
}

const identity = (o: KubeObject) => `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The objects of the kustomization in `dir`, by the small renderer. */
export function renderKustomizationInJs(dir: string): KubeObject[] {
  const file = join(dir, 'kustomization.yaml');
  const [kustomization] = parseObjects(readFileSync(file, 'utf8'), file) as unknown as Record<string, unknown>[];
  const unsupported = Object.keys(kustomization ?? {}).filter((key) => !SUPPORTED_KEYS.has(key));
  if (unsupported.length > 0) throw new Error(`${file}: ${unsupported.join(', ')} not supported by the JS renderer (test/helpers/kustomize.ts)`);
  const objects: KubeObject[] = [];
  for (const resource of (kustomization!.resources as string[] | undefined) ?? []) {
    const path = join(dir, resource);
    objects.push(...(statSync(path).isDirectory() ? renderKustomizationInJs(path) : parseObjects(readFileSync(path, 'utf8'), path)));
  }
  for (const entry of (kustomization!.patches as Record<string, unknown>[] | undefined) ?? []) {
    if (Object.keys(entry).some((key) => key !== 'path')) throw new Error(`${file}: patches with ${Object.keys(entry).join(', ')} not supported by the JS renderer`);
    const patchFile = join(dir, entry.path as string);
    for (const patch of parseObjects(readFileSync(patchFile, 'utf8'), patchFile)) {
      const index = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name && o.apiVersion === patch.apiVersion);
      if (index < 0) throw new Error(`${patchFile}: no ${patch.kind} ${patch.metadata.name} to patch`);
      objects[index] = mergePatch(objects[index], patch, patchFile) as KubeObject;
    }
  }
  const seen = new Set<string>();
  for (const object of objects) {
    if (seen.has(identity(object))) throw new Error(`${dir}: ${identity(object)} is defined twice`);
    seen.add(identity(object));
  }
  return objects;
}

/** Whether `kubectl kustomize` can run here. */
export function kubectlAvailable(): boolean {
  return spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
}

export function renderKustomizationWithKubectl(dir: string): KubeObject[] {
  return parseObjects(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 }), `kubectl kustomize ${dir}`);
}

/** The same objects in one order, for comparing two renderings. */
export function byIdentity(objects: KubeObject[]): KubeObject[] {
  return [...objects].sort((a, b) => identity(a).localeCompare(identity(b)));
}
