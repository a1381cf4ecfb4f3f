// `npm run bench -- [flags]`: what to run and for how long. Defaults make a full run of
// about 15–17 minutes on 2 cores (scenario 4 holds the floor twice); --quick is a ~2–3 minute smoke test of every scenario.

/** Scenario 4's topology when one process cannot hold every stream (docs/decisions/0030). */
export const IDLE_TOPOLOGY_DEFAULT = 'workers';
const IDLE_TOPOLOGIES = new Set(['workers', 'reuseport']);

export const USAGE = `npm run bench -- [flags]   the suite (scenarios 1–7 against every target)

  --quick                 smoke test (~2-3 min): 1 run of 2 s per measurement, fewer streams
  --scenarios 1,2,3,4,5,7 which scenarios to run (5 needs 1: it reads Redis during 1's runs);
                          6 (not in the default set): one agent on 3 runners, one killed mid-run;
                          7: MCP tools/call at --rate, against the MCP server direct and the floor
  --runs N                repetitions of each measurement; figures are medians (default 3)
  --duration-s S          length of one throughput / fixed-rate measurement (default 5)
  --warmup-s S            warm-up per target before scenario 1, and of each fixed-rate run (default 2)
  --connections 32,256    scenario 1 connection counts
  --rate N                scenarios 2 and 7 requests per second (default 2000)
  --streams N             scenario 3 streams per run (default 256), --stream-concurrency N (32)
  --idle-streams N        scenario 4 concurrent streams (default 10000), --idle-hold-s S (30); the
                          floor (bare undici processes) holds as many just before and after the gateway
  --node 22,24,26         also run the gateway under each of these Node runtimes, side by side
                          with the default one (same rounds, same load generator and stub on
                          the default runtime): a major line is fetched from the npm registry
                          into var/runtimes/ (scripts/node-runtime.mjs); a path is a node binary.
                          Adds the "Node runtimes" table: CPU per request and p99 of each
  --idle-workers N        scenario 4 gateway processes (default: 1, or as many as ulimit -Hn needs)
  --idle-topology T       how scenario 4 spreads streams over processes when one cannot hold them:
                          workers (serve --workers N: a primary and N workers) or reuseport (N
                          standalone instances with listen.reuse_port on one port, no primary;
                          each with the workers' runtime settings). Default: ${IDLE_TOPOLOGY_DEFAULT}
  --idle-node-args ARGS   node flags for scenario 4's gateway (e.g. "--max-semi-space-size=2"), to
                          measure a memory setting side by side with the default
  --profile               also run the gateway once under --cpu-prof (scenario 1 load) and
                          summarise where its CPU time goes
  --limit-variants LIST   extra gateway targets for scenarios 1 and 5, each the bench gateway
                          with one config variation (bench/lib/build-specs.mjs), measured in the
                          same rounds (default budgets-cap: a token budget and a stream cap;
                          "none" for no extra target)
  --no-wrk, --no-nginx    skip wrk / the nginx reference even when installed
  --no-usage-rollups      run the gateway with audit.usage_rollups: false (an A/B of the rollup's cost)
  --no-peers              skip the peer gateways (bench/peers: a fastify stack, Portkey); by default
                          they are installed on first use (npm ci --prefix bench/peers)
  --out PATH              result file (default bench/results/<date>.json, -2, -3… if taken)
  --markdown              also print the tables as Markdown (for docs/performance.md)
  --keep-tmp              keep the temp dir (configs, gateway log, profiles) after the run
  --timeout-s S           give up (and stop everything) after S seconds (default 2400)
`;

const FULL = {
  runs: 3,
  durationS: 5,
  warmupS: 2,
  connections: [32, 256],
  ratePerSec: 2000,
  streams: 256,
  streamConcurrency: 32,
  idleStreams: 10_000,
  idleHoldS: 30,
  timeoutS: 2400,
};

const QUICK = {
  ...FULL,
  runs: 1,
  durationS: 2,
  warmupS: 1,
  streams: 64,
  idleStreams: 2_000,
  idleHoldS: 6,
  timeoutS: 600,
};

function fail(message) {
  throw new Error(`${message}\n\n${USAGE}`);
}

const SWITCHES = new Set(['quick', 'profile', 'no-wrk', 'no-nginx', 'no-usage-rollups', 'no-peers', 'markdown', 'keep-tmp', 'help']);
const VALUED = new Set(['limit-variants', 'scenarios', 'runs', 'duration-s', 'warmup-s', 'connections', 'rate', 'streams', 'stream-concurrency', 'idle-streams', 'idle-hold-s', 'out', 'timeout-s', 'node', 'idle-workers', 'idle-node-args', 'idle-topology']);

const LIMIT_VARIANTS = new Set(['budgets', 'budgets-cap', 'no-lease', 'no-limits', 'a2a']);

function idleTopology(value) {
  if (!IDLE_TOPOLOGIES.has(value)) fail(`--idle-topology: ${JSON.stringify(value)} is not one of ${[...IDLE_TOPOLOGIES].join(', ')}`);
  return value;
}

function limitVariants(value) {
  if (value === undefined) return ['budgets-cap'];
  if (value === 'none') return [];
  const names = String(value).split(',');
  for (const name of names) if (!LIMIT_VARIANTS.has(name)) fail(`--limit-variants: unknown variant ${name} (${[...LIMIT_VARIANTS].join(', ')}, none)`);
  return names;
}

export function parseOptions(argv) {
  const flags = new Map();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (!arg.startsWith('--')) fail(`unexpected argument ${JSON.stringify(arg)}`);
    const [name, inline] = arg.slice(2).split('=', 2);
    if (!SWITCHES.has(name) && !VALUED.has(name)) fail(`unknown flag --${name}`);
    const takesValue = VALUED.has(name);
    if (!takesValue) flags.set(name, true);
    else if (inline !== undefined) flags.set(name, inline);
    else if (i + 1 < argv.length) flags.set(name, argv[(i += 1)]);
    else fail(`--${name} needs a value`);
  }

  const base = flags.has('quick') ? QUICK : FULL;
  const number = (name, fallback, min = 0) => {
    if (!flags.has(name)) return fallback;
    const n = Number(flags.get(name));
    if (!Number.isFinite(n) || n < min) fail(`--${name} must be a number ≥ ${min}`);
    return n;
  };
  const list = (name, fallback) => {
    if (!flags.has(name)) return fallback;
    const xs = String(flags.get(name)).split(',').map(Number);
    if (xs.some((x) => !Number.isInteger(x) || x <= 0)) fail(`--${name} must be a comma-separated list of positive integers`);
    return xs;
  };
  const scenarios = new Set(list('scenarios', [1, 2, 3, 4, 5, 7]));
  for (const s of scenarios) if (s > 7) fail(`there is no scenario ${s}`);

  // --node: major lines (fetched) or paths of node binaries, in the order given.
  const nodes = flags.has('node') ? String(flags.get('node')).split(',').map((x) => x.trim()).filter(Boolean) : [];
  for (const n of nodes) if (!/^\d+$/.test(n) && !n.includes('/')) fail(`--node takes major lines (22) or paths to node binaries, not ${JSON.stringify(n)}`);
  if (flags.has('node') && nodes.length === 0) fail('--node needs at least one line or path');

  return {
    help: flags.has('help'),
    nodes,
    quick: flags.has('quick'),
    scenarios,
    runs: Math.round(number('runs', base.runs, 1)),
    durationS: number('duration-s', base.durationS, 1),
    warmupS: number('warmup-s', base.warmupS, 0),
    connections: list('connections', base.connections),
    ratePerSec: number('rate', base.ratePerSec, 1),
    streams: Math.round(number('streams', base.streams, 1)),
    streamConcurrency: Math.round(number('stream-concurrency', base.streamConcurrency, 1)),
    idleStreams: Math.round(number('idle-streams', base.idleStreams, 1)),
    idleHoldS: number('idle-hold-s', base.idleHoldS, 1),
    limitVariants: limitVariants(flags.get('limit-variants')),
    idleNodeArgs: flags.has('idle-node-args') ? String(flags.get('idle-node-args')).split(/\s+/).filter(Boolean) : [],
    idleWorkers: flags.has('idle-workers') ? Math.round(number('idle-workers', 1, 1)) : null,
    idleTopology: idleTopology(flags.has('idle-topology') ? String(flags.get('idle-topology')) : IDLE_TOPOLOGY_DEFAULT),
    profile: flags.has('profile'),
    wrk: !flags.has('no-wrk'),
    usageRollups: !flags.has('no-usage-rollups'),
    nginx: !flags.has('no-nginx'),
    peers: !flags.has('no-peers'),
    out: flags.get('out') ?? null,
    markdown: flags.has('markdown'),
    keepTmp: flags.has('keep-tmp'),
    timeoutS: number('timeout-s', base.timeoutS, 10),
  };
}
