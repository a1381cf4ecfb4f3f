// Micro benchmark: the cost of authenticating a key that is already in the in-process cache
// (the hot path of every request), and of its two steps. Prints ns/op, median of several runs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = (path) => pathToFileURL(resolve(import.meta.dirname, '..', '..', 'dist', path)).href;

export const USAGE = `node bench/run.mjs auth-cached-key

  The built code's KeyAuthenticator on a cached key, parseApiKey and hashApiKey, in ns per
  call (npm run build first). Environment: OPS (calls a run, default 200000), RUNS (runs,
  default 7).
`;

export async function run() {
  const { FailedAuthThrottle } = await import(dist('auth/failed-auth-throttle.js'));
  const { FileKeyStore } = await import(dist('keys/file-key-store.js'));
  const { KeyAuthenticator } = await import(dist('auth/key-authenticator.js'));
  const { hashApiKey, parseApiKey } = await import(dist('keys/key-format.js'));
  const { KeyService } = await import(dist('keys/key-service.js'));
  const { systemClock } = await import(dist('clock.js'));
  const { silentLogger } = await import(dist('logger.js'));

  const OPS = Number(process.env.OPS ?? 200_000);
  const RUNS = Number(process.env.RUNS ?? 7);

  const dir = await mkdtemp(join(tmpdir(), 'agentgw-bench-'));
  const store = await FileKeyStore.open({ path: join(dir, 'keys.json'), logger: silentLogger, watch: false });
  const config = { plans: new Map([['pro', { windows: [] }]]), agents: new Map([['support', {}]]) };
  const { rawKey } = await new KeyService({ store, config }).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
  const throttle = new FailedAuthThrottle({ maxAttempts: 20, perMs: 60_000, blockForMs: 60_000, clock: systemClock, logger: silentLogger });
  const auth = new KeyAuthenticator({ store, clock: systemClock, logger: silentLogger, cacheTtlMs: 3_600_000, negativeCacheTtlMs: 5_000, throttle });
  const input = { authorization: `Bearer ${rawKey}`, agentId: 'support', clientIp: '127.0.0.1' };
  await auth.authenticate(input); // fills the cache

  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  async function measureAsync(label, fn) {
    for (let i = 0; i < 20_000; i++) await fn();
    const results = [];
    for (let run = 0; run < RUNS; run++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < OPS; i++) await fn();
      results.push(Number(process.hrtime.bigint() - start) / OPS);
    }
    console.log(`${label.padEnd(44)} ${median(results).toFixed(0).padStart(6)} ns/op  (median of ${RUNS} × ${OPS})`);
  }

  function measureSync(label, fn) {
    for (let i = 0; i < 20_000; i++) fn();
    const results = [];
    for (let run = 0; run < RUNS; run++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < OPS; i++) fn();
      results.push(Number(process.hrtime.bigint() - start) / OPS);
    }
    console.log(`${label.padEnd(44)} ${median(results).toFixed(0).padStart(6)} ns/op  (median of ${RUNS} × ${OPS})`);
  }

  console.log(`node ${process.version}`);
  await measureAsync('await authenticate(cached key)', () => auth.authenticate(input));
  measureSync('  of which parseApiKey (format + CRC32)', () => parseApiKey(rawKey));
  measureSync('  of which hashApiKey (SHA-256 hex)', () => hashApiKey(rawKey));

  await auth.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
