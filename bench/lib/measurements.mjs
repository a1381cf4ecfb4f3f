// The measurements `bench/run.mjs NAME [flags]` runs on their own, outside the suite's rounds:
// each narrows one question the suite's scenarios cannot answer at their scale (an A/B of
// builds, a count one request at a time, a stage inside one process, a micro benchmark).
// Each lives in bench/scenarios/NAME.mjs and exports USAGE (its flags) and run(argv).
// Loaded only when named, so the suite never imports a module it does not run (several read
// dist/ at load time).

/** Name → one line for `--help`; the order is the order `--help` lists them in. */
export const MEASUREMENTS = {
  'compare-builds': 'interleaved A/B of gateway builds: CPU per request (wrk), --rate latency, --streams per-event delay',
  'limit-commands': 'Redis commands per request, one request at a time, per limit variant (budgets, stream cap)',
  'stream-stages': "where a stream's start spends its time inside the gateway or bare undici (preloaded stamps)",
  'idle-floor': "scenario 4's floor: bare node:http + undici processes on one port holding idle streams",
  'audit-overhead': 'what the usage audit sinks cost the request path (redis+file, file, no journal, /dev/null)',
  'audit-pg': 'the PostgreSQL audit table at volume: sink inserts per second, the per-key 30-day usage query at 10,000,000 rows (day partitions)',
  'usage-report': 'usage reports over 30 days of rollups, both sources, and the rollup script per audit batch',
  'json-guard': "micro benchmark: the JSON guard's ns per call, builds interleaved (or N calls for callgrind)",
  'auth-cached-key': 'micro benchmark: authenticating a key that is already in the in-process cache',
  keys: 'the key store at 10k, 100k and 1,000,000 keys: admin page p50/p99 per filter, create and revoke rate, gateway RSS, Redis bytes per key',
  'idle-rss': 'idle memory: VmRSS of the floor, of an idle `serve --demo` and of `serve --workers 2` (primary, workers), each alone',
  'start-up-time': 'spawn to listening of `serve` (default --demo, what npm start runs), two built checkouts alternated',
  'rapid-reset': 'HTTP/2 rapid reset (20 connections × 5 s) against the TLS listener: another client\'s latency, the admin listener, gateway CPU',
};

export function measurementsHelp() {
  const width = Math.max(...Object.keys(MEASUREMENTS).map((name) => name.length));
  const lines = Object.entries(MEASUREMENTS).map(([name, summary]) => `  ${name.padEnd(width)}  ${summary}`);
  return `node bench/run.mjs NAME [flags]   one measurement on its own (node bench/run.mjs NAME --help: its flags)\n\n${lines.join('\n')}\n`;
}

/** Runs measurement `name` with `argv` (its own flags); an unknown name throws the list. */
export async function runMeasurement(name, argv) {
  if (!Object.hasOwn(MEASUREMENTS, name)) throw Object.assign(new Error(`unknown measurement ${JSON.stringify(name)}\n\n${measurementsHelp()}`), { usage: true });
  const measurement = await import(`../scenarios/${name}.mjs`);
  if (argv.includes('--help')) {
    process.stdout.write(measurement.USAGE);
    return;
  }
  await measurement.run(argv);
}
