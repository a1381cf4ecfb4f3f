// Closed-loop throughput load (scenario 1): autocannon from npm, so the bench works
// anywhere, and wrk when it is installed (a C generator costs the shared cores less, and its
// latencies have microsecond resolution). Both send the same POST; both report only 2xx
// answers as throughput, so a target that answers errors fast cannot look good.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';

/**
 * The chat request (docs/api.md) every scenario sends (the same 119 bytes as bench/reference);
 * a peer that speaks another API (Portkey: OpenAI's) gives its own as `target.chatBody`.
 */
export const REQUEST_BODY = JSON.stringify({
  message: 'Hello, what can you do?',
  context: { user_id: 'u-1', session_id: 's-1' },
  temperature: 0.7,
  max_tokens: 256,
});

/**
 * @param {{ url: string, chatPath: string, headers: Record<string, string> }} target
 * @returns {Promise<{ reqPerSec, requests, p50Ms, p99Ms, errors, non2xx }>}
 */
export async function runAutocannon(target, { connections, durationS }) {
  const result = await autocannon({
    url: `${target.url}${target.chatPath}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: target.chatBody ?? REQUEST_BODY,
    connections,
    pipelining: 1,
    duration: durationS,
  });
  const ok = result['2xx'];
  return {
    reqPerSec: ok / result.duration,
    requests: ok,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    /** Of the errors, requests unanswered within autocannon's 10 s (an overloaded target). */
    timeouts: result.timeouts,
    non2xx: result.non2xx,
  };
}

function execText(command, args, timeoutMs) {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      resolve({ ok: !error, text: `${stdout}${stderr}` });
    });
  });
}

/** wrk's version when installed, else null. */
export async function findWrk() {
  const out = await execText('wrk', ['-v'], 5_000);
  return /^wrk (\S+)/m.exec(out.text)?.[1] ?? null;
}

const luaString = (text) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** One Lua script per target (its headers differ); the summary line is machine-readable. */
function writeWrkScript(tmpDir, target) {
  const path = join(tmpDir, `wrk-${target.name}.lua`);
  const headerLines = Object.entries({ 'Content-Type': 'application/json', ...target.headers })
    .map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`)
    .join('\n');
  writeFileSync(
    path,
    `wrk.method = "POST"
${headerLines}
wrk.body = ${luaString(target.chatBody ?? REQUEST_BODY)}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
`,
  );
  return path;
}

export async function runWrk(target, { connections, durationS, tmpDir }) {
  const script = writeWrkScript(tmpDir, target);
  // One thread: the two cores are shared by the generator, the target and the stub.
  const args = ['-t1', `-c${connections}`, `-d${durationS}s`, '--timeout', '5s', '-s', script, `${target.url}${target.chatPath}`];
  const out = await execText('wrk', args, (durationS + 30) * 1000);
  const line = out.text.split('\n').find((l) => l.startsWith('WRK_JSON '));
  if (!line) throw new Error(`wrk printed no summary:\n${out.text}`);
  const s = JSON.parse(line.slice('WRK_JSON '.length));
  const ok = s.requests - s.errors.status;
  return {
    reqPerSec: ok / (s.duration_us / 1e6),
    requests: ok,
    p50Ms: s.p50_us / 1000,
    p99Ms: s.p99_us / 1000,
    errors: s.errors.connect + s.errors.read + s.errors.write + s.errors.timeout,
    non2xx: s.errors.status,
  };
}
