// What the usage audit costs the request path (docs/design.md, "Usage audit records": "writes
// are batched off the request path"). The built gateway (`dist/cli/main.js serve`) runs as
// its own process in front of the stub runner (another process); autocannon drives POST /chat
// from this process. Four audit set-ups, everything else identical (same redis block, file key
// store, a `scale` key with no rate limits, log level warn):
//
//   redis+file  audit.redis_stream + audit.file      both sinks on (a typical shared deployment)
//   no-journal  redis+file with audit.journal: false the write-ahead journal's cost (decision 0022)
//   file        audit.file only                      the embedded default
//   devnull     audit.file: /dev/null                baseline: records are still built, batched
//                                                    and written, but the write costs nothing
//
// There is no "audit off" switch in the product (every authenticated request is audited),
// so /dev/null is the closest honest baseline: the difference to it is the cost of the real
// sinks, not of the audit machinery as a whole. Rounds interleave the set-ups so drift on a
// shared machine spreads over all of them; each figure is the median of the runs. The
// gateway's own CPU time per 1k requests is printed too: it is less sensitive to neighbours
// than req/s.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { startBenchRedis } from '../lib/bench-redis.mjs';
import { startGatewayProcess } from '../lib/gateway.mjs';
import { runAutocannon } from '../lib/load-tools.mjs';
import { cpuMs } from '../lib/proc-stats.mjs';
import { installExitHandlers, startStubRunner, stopAll } from '../lib/processes.mjs';
import { median } from '../lib/stats.mjs';
import { readOption } from '../reference/cli-args.mjs';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const STREAM_KEY = 'agentgw-bench-audit:audit';
const SETUPS = ['redis+file', 'no-journal', 'file', 'devnull'];

export const USAGE = `node bench/run.mjs audit-overhead [--duration-s 8] [--runs 3] [--connections 32] [--warmup-s 1]

  POST /chat through the gateway under four audit set-ups, interleaved round by round:
  redis+file, no-journal (redis+file without the write-ahead journal), file, devnull
  (audit.file: /dev/null, the baseline). Build first (npm run build).
  --duration-s S    length of one measured run (default 8)
  --runs N          rounds; figures are medians (default 3)
  --connections N   autocannon connections (default 32)
  --warmup-s S      warm-up of each gateway before its run (default 1)
`;

async function lineCount(path) {
  try {
    const text = await readFile(path, 'utf8');
    return text.length === 0 ? 0 : text.split('\n').length - 1;
  } catch {
    return 0;
  }
}

const sizeOf = (path) => stat(path).then((s) => s.size, () => 0);
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

/** The key the load uses, created in the set-ups' file key store through the library the CLI uses. */
async function createKey(base) {
  const dist = (path) => pathToFileURL(join(repoRoot, 'dist', path)).href;
  const { parseConfig } = await import(dist('config/load-config.js'));
  const { openCliKeyStore } = await import(dist('cli/keys.js'));
  const { KeyService } = await import(dist('keys/key-service.js'));
  const config = parseConfig({ ...base, listen: { port: 0 }, admin: { port: 0 } }, 'bench', {});
  const store = await openCliKeyStore(config);
  try {
    return (await new KeyService({ store, config }).createKey({ account: 'bench', plan: 'scale', agents: ['support'] })).rawKey;
  } finally {
    await store.close();
  }
}

export async function run(argv) {
  const durationS = Number(readOption(argv, 'duration-s', undefined, '8'));
  const runs = Number(readOption(argv, 'runs', undefined, '3'));
  const connections = Number(readOption(argv, 'connections', undefined, '32'));
  const warmupS = Number(readOption(argv, 'warmup-s', undefined, '1'));
  const { spoolPathFor } = await import(pathToFileURL(join(repoRoot, 'dist/audit/audit-spool.js')).href);

  installExitHandlers();
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-bench-audit-'));
  const redis = await startBenchRedis({ tmpDir: dir });
  const client = new Redis(redis.url, { maxRetriesPerRequest: 2 });
  client.on('error', () => {});
  try {
    const stub = await startStubRunner({ tmpDir: dir });
    const base = {
      listen: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      redis: { url: redis.url, prefix: 'agentgw-bench-audit:' },
      keys: { store: 'file', file: join(dir, 'keys.json') },
      plans: { scale: { windows: [] } },
      agents: { support: { upstream: `${stub.url}/api/v1` } },
      log: { level: 'warn' },
      shutdown_grace: '5s',
    };
    const auditFile = join(dir, 'audit.jsonl');
    const documents = {
      'redis+file': { ...base, audit: { redis_stream: STREAM_KEY, file: auditFile, spool: join(dir, 'spool-redis-file.jsonl') } },
      // The same without the write-ahead journal (decision 0022): the difference is the journal's cost.
      'no-journal': { ...base, audit: { redis_stream: STREAM_KEY, file: auditFile, spool: join(dir, 'spool-no-journal.jsonl'), journal: false } },
      file: { ...base, audit: { file: auditFile, spool: join(dir, 'spool-file.jsonl') } },
      devnull: { ...base, audit: { file: '/dev/null', spool: join(dir, 'spool-devnull.jsonl') } },
    };
    const rawKey = await createKey(base);

    console.log(`node ${process.version}, ${connections} connections, ${durationS} s per run (+${warmupS} s warm-up), ${runs} runs per set-up, POST /chat`);
    const rows = Object.fromEntries(SETUPS.map((s) => [s, []]));
    for (let round = 1; round <= runs; round += 1) {
      for (const setup of SETUPS) {
        await client.del(STREAM_KEY);
        await rm(auditFile, { force: true });
        const name = setup.replace('+', '-');
        const configPath = join(dir, `${name}.yaml`);
        await writeFile(configPath, stringify(documents[setup]));
        const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir: dir, name });
        const target = { url: gateway.url, chatPath: '/agents/support/api/v1/chat', headers: { authorization: `Bearer ${rawKey}` } };
        await runAutocannon(target, { connections, durationS: warmupS });
        // The warm-up's last batch lands before the counts are taken.
        await settle();
        const streamBefore = await client.xlen(STREAM_KEY);
        const fileBefore = await lineCount(auditFile);
        const cpuBefore = cpuMs(gateway.pid);
        const result = await runAutocannon(target, { connections, durationS });
        const cpu = cpuMs(gateway.pid) - cpuBefore;
        // Let the last batch land, then see whether the sinks kept up (nothing left spooled).
        await settle();
        let spooled = 0;
        for (const sink of ['redis', 'file']) {
          const path = spoolPathFor(documents[setup].audit.spool, sink);
          spooled += (await sizeOf(path)) + (await sizeOf(`${path}.replaying`));
        }
        const row = {
          reqPerSec: result.reqPerSec,
          p50Ms: result.p50Ms,
          p99Ms: result.p99Ms,
          ok: result.requests,
          errors: result.errors + result.non2xx,
          cpuMsPer1k: (cpu / Math.max(1, result.requests)) * 1000,
          streamRecords: setup === 'redis+file' || setup === 'no-journal' ? (await client.xlen(STREAM_KEY)) - streamBefore : null,
          fileRecords: setup === 'devnull' ? null : (await lineCount(auditFile)) - fileBefore,
          spoolBytes: spooled,
        };
        rows[setup].push(row);
        await gateway.stop();
        console.log(
          `  round ${round} ${setup.padEnd(10)} ${row.reqPerSec.toFixed(0).padStart(6)} req/s  p50 ${row.p50Ms} ms  p99 ${row.p99Ms} ms  ` +
            `cpu ${row.cpuMsPer1k.toFixed(1)} ms/1k  2xx ${row.ok}  errors ${row.errors}` +
            (row.streamRecords === null ? '' : `  stream +${row.streamRecords}`) +
            (row.fileRecords === null ? '' : `  file +${row.fileRecords}`) +
            `  spool ${row.spoolBytes} B`,
        );
      }
    }

    const baseline = median(rows.devnull.map((r) => r.reqPerSec));
    console.log('');
    console.log(`median of ${runs} runs`);
    console.log('set-up       req/s   vs devnull   p50 ms   p99 ms   gateway CPU ms/1k req');
    for (const setup of SETUPS) {
      const rps = median(rows[setup].map((r) => r.reqPerSec));
      const ratio = `${(((rps - baseline) / baseline) * 100).toFixed(1)}%`;
      console.log(
        `${setup.padEnd(10)} ${rps.toFixed(0).padStart(7)} ${ratio.padStart(12)} ${String(median(rows[setup].map((r) => r.p50Ms))).padStart(8)} ` +
          `${String(median(rows[setup].map((r) => r.p99Ms))).padStart(8)} ${median(rows[setup].map((r) => r.cpuMsPer1k)).toFixed(1).padStart(12)}`,
      );
    }
  } finally {
    client.disconnect();
    await stopAll();
    await redis.close();
    await rm(dir, { recursive: true, force: true });
  }
}
