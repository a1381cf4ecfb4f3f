// Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went: the functions with
// the most self time, self time per module (gateway file, dependency, node internals), the
// same time charged to the gateway file or dependency that caused it, and the gateway's own
// functions by inclusive time (what a request step costs with all it calls).
import { readFileSync } from 'node:fs';

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Where a frame's code lives, short enough for a table. */
function moduleOf(url) {
  if (!url) return '(native)';
  const dist = url.indexOf('/dist/');
  if (dist !== -1 && !url.includes('/node_modules/')) return `gateway ${url.slice(dist + 1)}`;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) {
    // node:internal/http/... → node:http (internal), enough to tell http from streams from net.
    const parts = url.slice('node:'.length).split('/');
    return parts[0] === 'internal' ? `node:${parts[1] ?? 'internal'}` : `node:${parts[0]}`;
  }
  return url;
}

function frameName(node) {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  if (SPECIAL.has(name) || !url) return name;
  const file = url.startsWith('node:') ? url : url.slice(url.lastIndexOf('/', url.lastIndexOf('/') - 1) + 1);
  return `${name} ${file}:${lineNumber + 1}`;
}

/**
 * @param {string} path a .cpuprofile file
 * @param {{ top?: number }} [options]
 */
export function summariseCpuProfile(path, { top = 15 } = {}) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const sampleMs = (profile.endTime - profile.startTime) / 1000 / Math.max(1, profile.samples.length);
  const hits = new Map();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

  const totalMs = profile.samples.length * sampleMs;
  const idleMs = [...hits].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((n, [, h]) => n + h * sampleMs, 0);
  const busyMs = totalMs - idleMs;

  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // A native function (socket writev, fs write, hashing) has no script URL: its time is
  // charged to the nearest JavaScript caller's module, and its name says who called it.
  const jsCaller = (id) => {
    for (let cur = parent.get(id); cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (node?.callFrame.url) return node;
    }
    return null;
  };

  // Who caused the work: the first frame on the stack in the gateway's code or a dependency.
  // Node internals and native code (socket writes, parsing) count for whoever called them.
  const isOwnerFrame = (url) => url.includes('/node_modules/') || url.includes('/dist/');
  const ownerOf = (id) => {
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (node && isOwnerFrame(node.callFrame.url)) return moduleOf(node.callFrame.url);
    }
    const leaf = byId.get(id);
    const nearest = leaf?.callFrame.url ? leaf : jsCaller(id);
    return `node only (${nearest ? moduleOf(nearest.callFrame.url) : 'native'})`;
  };

  const selfByFrame = new Map();
  const selfByModule = new Map();
  const byOwner = new Map();
  for (const [id, count] of hits) {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === '(idle)') continue;
    const ms = count * sampleMs;
    const special = SPECIAL.has(node.callFrame.functionName);
    const caller = !special && !node.callFrame.url ? jsCaller(id) : null;
    const name = caller ? `${node.callFrame.functionName || '(native)'} (native) ← ${frameName(caller)}` : frameName(node);
    selfByFrame.set(name, (selfByFrame.get(name) ?? 0) + ms);
    const mod = special ? node.callFrame.functionName : moduleOf((caller ?? node).callFrame.url);
    selfByModule.set(mod, (selfByModule.get(mod) ?? 0) + ms);
    const owner = special ? node.callFrame.functionName : ownerOf(id);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + ms);
  }

  // Inclusive time of gateway functions: a frame counts once per sample even when it recurses.
  const inclusive = new Map();
  for (const [id, count] of hits) {
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (!node?.callFrame.url.includes('/dist/') || node.callFrame.url.includes('/node_modules/')) continue;
      const name = frameName(node);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + count * sampleMs);
    }
  }

  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), pctOfBusy: Math.round((ms / busyMs) * 1000) / 10 }));
  return {
    totalMs: Math.round(totalMs),
    busyMs: Math.round(busyMs),
    sampleIntervalMs: Math.round(sampleMs * 1000) / 1000,
    topSelf: rows(selfByFrame),
    selfByModule: rows(selfByModule),
    byOwner: rows(byOwner),
    gatewayInclusive: rows(inclusive),
  };
}
