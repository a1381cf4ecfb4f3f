// Micro benchmark: parseGuardedJson (src/http/json-guard.ts), the JSON guard every chat body
// goes through, on the bench's request body and a few variants, for one or more builds.
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const BODIES = {
  // The bench's request body (bench/lib/load-tools.mjs): 6 keys, one nested object.
  chat: '{"message":"Hello, what can you do?","context":{"user_id":"u-1","session_id":"s-1"},"temperature":0.7,"max_tokens":256}',
  // A message with escapes (newlines, a quote): strings with a backslash, keys without.
  escapes: '{"message":"Line one\\nLine two\\n\\"quoted\\"\\tend","context":{"user_id":"u-1","session_id":"s-1"},"temperature":0.7,"max_tokens":256}',
  // Past PARSE_FIRST_MAX_CHARS: scanned before it is parsed.
  long: `{"message":"${'Hello, what can you do? '.repeat(60)}","context":{"user_id":"u-1","session_id":"s-1"},"temperature":0.7,"max_tokens":256}`,
  // A key with a backslash: the exact reader's path since decision 0032 (rare; an attacker can ask for it).
  backslashKey: '{"message":"Hello, what can you do?","context":{"user_id":"u-1","session_id":"s-1"},"temperature":0.7,"max_tokens":256,"\\\\":1}',
};
const MAX_DEPTH = 64;

export const USAGE = `node bench/run.mjs json-guard [label=distDir ...]
node bench/run.mjs json-guard --calls N --body NAME [distDir]

  The first form: ns per call on each body (${Object.keys(BODIES).join(', ')}),
  builds interleaved run by run; without a distDir, this checkout's dist/ (npm run build
  first). Environment: OPS (calls a run, default 200000), RUNS (runs, default 9).
  The second: N calls on one body and nothing else, for callgrind: run it with two values of
  N and divide the difference (decision 0017).
`;

export async function run(argv) {
  const args = argv;
  const callsAt = args.indexOf('--calls');
  if (callsAt !== -1) {
    const calls = Number(args[callsAt + 1]);
    const body = BODIES[args[args.indexOf('--body') + 1]];
    const dist = args.find((arg, i) => !arg.startsWith('--') && i !== callsAt + 1 && args[i - 1] !== '--body') ?? 'dist';
    const { parseGuardedJson } = await import(pathToFileURL(resolve(dist, 'http/json-guard.js')).href);
    let sink = 0;
    for (let i = 0; i < calls; i++) if (parseGuardedJson(body, MAX_DEPTH) !== null) sink++;
    if (sink !== calls) throw new Error('unexpected answer');
  } else {
    const builds = (args.length > 0 ? args : ['dist']).map((arg) => {
      const [label, dist] = arg.includes('=') ? arg.split('=') : [arg, arg];
      return { label, dist };
    });
    for (const build of builds) build.parse = (await import(pathToFileURL(resolve(build.dist, 'http/json-guard.js')).href)).parseGuardedJson;
    const OPS = Number(process.env.OPS ?? 200_000);
    const RUNS = Number(process.env.RUNS ?? 9);
    const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    console.log(`node ${process.version}; ns per call, median of ${RUNS} runs × ${OPS} calls, builds interleaved`);
    for (const [name, body] of Object.entries(BODIES)) {
      const times = new Map(builds.map((build) => [build, []]));
      const reference = JSON.stringify(JSON.parse(body));
      for (const build of builds) {
        if (JSON.stringify(build.parse(body, MAX_DEPTH)) !== reference) throw new Error(`${build.label}: wrong value for ${name}`);
        for (let i = 0; i < 20_000; i++) build.parse(body, MAX_DEPTH);
      }
      for (let run = 0; run < RUNS; run++) {
        for (const build of builds) {
          const start = process.hrtime.bigint();
          for (let i = 0; i < OPS; i++) build.parse(body, MAX_DEPTH);
          times.get(build).push(Number(process.hrtime.bigint() - start) / OPS);
        }
      }
      let jsonParse = [];
      for (let run = 0; run < RUNS; run++) {
        const start = process.hrtime.bigint();
        for (let i = 0; i < OPS; i++) JSON.parse(body);
        jsonParse.push(Number(process.hrtime.bigint() - start) / OPS);
      }
      const cells = builds.map((build) => `${build.label} ${median(times.get(build)).toFixed(0).padStart(6)}`);
      console.log(`${name.padEnd(13)} (${String(body.length).padStart(4)} chars) ${cells.join('   ')}   JSON.parse alone ${median(jsonParse).toFixed(0).padStart(6)}`);
    }
  }
}
