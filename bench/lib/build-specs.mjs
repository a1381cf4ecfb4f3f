// Gateway builds as the A/B tools name them: `name=root[:variation...]`, a checkout with its
// own dist/, run in the bench's production config with some of it changed (a variation) or
// with extra node flags (a variation that starts with `--`), or under another node binary
// (`node=/path/to/node`: the runtime line as a variable, issue 26).
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Config edits per variation (the bench's YAML is written by bench/lib/gateway.mjs). */
export const CONFIG_VARIATIONS = {
  'no-limits': (yaml) => yaml.replace(/windows: \[.*\] \}/, 'windows: [] }'),
  'no-request-log': (yaml) => yaml.replace('level: info', 'level: warn'),
  'no-audit-stream': (yaml) => yaml.replace(/ {2}redis_stream: .*\n/, ''),
  'log-devnull': (yaml) => yaml.replace(/ {2}file: .*gateway\.log"\n/, '  file: "/dev/null"\n'),
  'pool-128': (yaml) => yaml.replace('    timeout: 30s\n', '    timeout: 30s\n    max_connections: 128\n'),
  'no-lease': (yaml) => yaml.replace('rate_limits: { scope: account, on_store_error: allow }', 'rate_limits: { scope: account, on_store_error: allow, lease: false }'),
};

/** `name=root[:variation...]` → { name, root, variations, nodeArgs, nodeBinary }. */
export function parseBuildSpec(spec) {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`a build is name=root[:variation...], not ${spec}`);
  const [name, rest] = [spec.slice(0, eq), spec.slice(eq + 1)];
  const [root, ...parts] = rest.split(':');
  const nodeBinary = parts.find((p) => p.startsWith('node='))?.slice('node='.length) ?? null;
  const variations = parts.filter((p) => !p.startsWith('--') && !p.startsWith('node='));
  for (const variation of variations) {
    if (!CONFIG_VARIATIONS[variation]) throw new Error(`unknown variation ${variation} (${Object.keys(CONFIG_VARIATIONS).join(', ')})`);
  }
  return { name, root: resolve(root), variations, nodeArgs: parts.filter((p) => p.startsWith('--')), nodeBinary };
}

/** Applies a build's config variations to the config file written for it. */
export function applyConfigVariations(configPath, variations) {
  let yaml = readFileSync(configPath, 'utf8');
  for (const variation of variations) yaml = CONFIG_VARIATIONS[variation](yaml);
  writeFileSync(configPath, yaml);
}
