// What the numbers were measured on. The machine is shared, so the load average before and
// after is part of every result.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { round } from './stats.mjs';

function pkgVersion(repoRoot, name) {
  try {
    return JSON.parse(readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

/** `ulimit -Hn` as a child shell sees it: the most file descriptors a child can be given. */
export function hardFdLimit() {
  try {
    const text = execFileSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
    return text === 'unlimited' ? 1_048_576 : Number(text);
  } catch {
    return 1024;
  }
}

/** The commit measured, and whether src/ had uncommitted changes (dist/ is built from them). */
function gitState(repoRoot) {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    return { commit, srcModified: dirty.length > 0 };
  } catch {
    return null;
  }
}

export function describeMachine({ repoRoot, startedAt, wrkVersion, nginx, redisVersion, hardFdLimit: fdHard }) {
  return {
    date: startedAt.toISOString(),
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? null,
    totalMemGiB: round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()} ${os.release()}`,
    node: process.version,
    loadAvgAtStart: os.loadavg().map((x) => round(x, 2)),
    hardFdLimit: fdHard,
    git: gitState(repoRoot),
    versions: {
      undici: pkgVersion(repoRoot, 'undici'),
      'http-proxy': pkgVersion(repoRoot, 'http-proxy'),
      autocannon: pkgVersion(repoRoot, 'autocannon'),
      ioredis: pkgVersion(repoRoot, 'ioredis'),
      wrk: wrkVersion,
      nginx: nginx?.version ?? null,
      redis: redisVersion,
    },
  };
}
