// Stops at once, with one line, on a Node.js outside package.json's `engines`: imported first by
// the CLI (dist/cli/main.js), scripts/build-if-needed.mjs (so `npm start`, `npm test`,
// `npm run bench` …), bench/run.mjs and vitest.config.ts, and runnable alone
// (`node scripts/node-guard.mjs`). On an unsupported Node the rest fails later in ways that
// do not name Node (a missing global, a module that will not load), so this check runs before
// anything else is loaded. Plain JavaScript of an old syntax level, no dependencies: an old
// Node must be able to parse it to refuse itself.
import { readFileSync } from 'node:fs';

/**
 * The alternatives of an `engines.node` range of the form `^22.13.0 || ^24.0.0 || >=26.1.0`
 * as [{ op, major, minor, patch }]; throws on any other form, so a range this check cannot
 * read is found by its test rather than passing every Node.
 */
export function parseEngineRange(range) {
  return String(range)
    .split('||')
    .map(function (part) {
      var match = /^\s*(\^|>=)(\d+)\.(\d+)\.(\d+)\s*$/.exec(part);
      if (!match) throw new Error('node-guard: cannot read the engines range part ' + JSON.stringify(part.trim()) + ' (expected ^X.Y.Z or >=X.Y.Z)');
      return { op: match[1], major: Number(match[2]), minor: Number(match[3]), patch: Number(match[4]) };
    });
}

function compare(a, b) {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** True when `version` ("22.13.1" or "v22.13.1") is inside `range`. */
export function nodeVersionSatisfies(version, range) {
  var match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(String(version));
  if (!match) return false;
  var v = { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) };
  return parseEngineRange(range).some(function (alt) {
    return compare(v, alt) >= 0 && (alt.op === '>=' || v.major === alt.major);
  });
}

/** "22 (≥ 22.13), 24 or 26": the lines a range names, for people. */
export function describeEngineRange(range) {
  var names = parseEngineRange(range).map(function (alt) {
    var line = alt.op === '>=' ? alt.major + ' or later' : String(alt.major);
    return alt.minor > 0 || alt.patch > 0 ? line + ' (>= ' + alt.major + '.' + alt.minor + (alt.patch > 0 ? '.' + alt.patch : '') + ')' : line;
  });
  return names.length === 1 ? names[0] : names.slice(0, -1).join(', ') + ' or ' + names[names.length - 1];
}

/**
 * The line a refusal tells people to install: the one the Docker image, CI and the bench run
 * (test/e2e/node-guard.test.ts holds the Dockerfile's `FROM node:N` to it), not merely the
 * newest the range allows.
 */
export var RECOMMENDED_NODE_LINE = 24;

/** The one-line refusal for `version`, or null when it is supported. */
export function unsupportedNodeMessage(version, range) {
  if (nodeVersionSatisfies(version, range)) return null;
  var lines = parseEngineRange(range);
  var recommended = lines.some(function (alt) {
    return alt.major === RECOMMENDED_NODE_LINE || (alt.op === '>=' && alt.major < RECOMMENDED_NODE_LINE);
  })
    ? RECOMMENDED_NODE_LINE
    : lines.reduce(function (a, b) {
        return compare(a, b) >= 0 ? a : b;
      }).major;
  return (
    'agent-gateway: Node.js ' + String(version).replace(/^v?/, 'v') + ' is not supported; it runs on Node.js ' + describeEngineRange(range) +
    ' (package.json "engines"). Get one with `nvm install ' + recommended + '` or from https://nodejs.org/en/download, then run this again.'
  );
}

function enginesRange() {
  var pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return pkg.engines.node;
}

var message = unsupportedNodeMessage(process.versions.node, enginesRange());
if (message !== null) {
  process.stderr.write(message + '\n');
  process.exit(1);
}
