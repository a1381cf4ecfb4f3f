// `--node 22,24,26`: the runtimes the extra gateways run on. A major line is fetched from the
// npm registry (scripts/node-runtime.mjs, the same copy `.ci/run` uses); a path is taken as
// is. Each becomes a target named gateway-node<major>, so its rows sit beside the default
// gateway's in every table of the same round.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { nodeRuntime } from '../../scripts/node-runtime.mjs';

/**
 * @param {string[]} specs major lines ("22") or paths to node binaries
 * @returns {Promise<{ runtimes: { name: string, version: string, path: string }[], notes: string[] }>}
 */
export async function resolveNodeRuntimes(specs, { log }) {
  const runtimes = [];
  const notes = [];
  for (const spec of specs) {
    let path;
    if (/^\d+$/.test(spec)) {
      try {
        path = (await nodeRuntime(spec, { log: (line) => log(`  ${line}`) })).path;
      } catch (error) {
        // One line that cannot be had must not cost the comparison of the others.
        notes.push(`--node ${spec}: ${error.message}; that runtime was not measured.`);
        continue;
      }
    } else if (existsSync(spec)) {
      path = spec;
    } else {
      throw new Error(`--node ${spec}: no such file`);
    }
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    const name = `gateway-node${/^v(\d+)/.exec(version)[1]}`;
    if (runtimes.some((r) => r.name === name)) {
      notes.push(`--node ${spec}: ${name} is already measured (${runtimes.find((r) => r.name === name).version}); ${version} was skipped.`);
      continue;
    }
    runtimes.push({ name, version, path });
  }
  return { runtimes, notes };
}
