// SIGHUP against the built CLI: agents and plans change for new requests while a stream
// opened before the reload keeps flowing to its end; an invalid file is refused with a log
// line and the running config is kept.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import { KeyService } from '../../src/keys/key-service.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { openSse } from '../helpers/sse-client.js';

let dir: string;
let support: FakeUpstream;
let extra: FakeUpstream;
let gateway: GatewayProcess;
let key: string;
let releaseStream!: () => void;
const streamReleased = new Promise<void>((resolve) => (releaseStream = resolve));

function configDocument(version: 'v1' | 'v2'): Record<string, unknown> {
  return {
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl') },
    log: { level: 'info' },
    plans: { metered: { windows: [{ requests: version === 'v1' ? 100 : 7, per: '1m' }] } },
    stream: { heartbeat: '10s' },
    agents: version === 'v1' ? { support: { upstream: support.baseUrl } } : { support: { upstream: support.baseUrl }, extra: { upstream: extra.baseUrl } },
  };
}

/** Rewrites the running gateway's config file (keeping the ports the helper chose). */
async function rewriteConfig(document: Record<string, unknown> | string): Promise<void> {
  const text = typeof document === 'string' ? document : stringify({ ...document, listen: { host: '127.0.0.1', port: gateway.port }, admin: { host: '127.0.0.1', port: gateway.adminPort } });
  await writeFile(gateway.configPath, text);
}

async function waitForOutput(pattern: RegExp, count = 1, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((gateway.output().match(new RegExp(pattern.source, 'g')) ?? []).length < count) {
    if (Date.now() > deadline) throw new Error(`no ${pattern} (x${count}) in gateway output:\n${gateway.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function chat(agent: string): Promise<Response> {
  return fetch(`${gateway.url}/agents/${agent}/api/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'hi' }),
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-ops-reload-'));
  support = await startFakeUpstream(async (req, res) => {
    if (!req.url?.endsWith('/chat/stream')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ response: 'from support', tool_calls: [], metadata: { tokens_used: 1 } }));
      return;
    }
    // A token every 50 ms until the test releases the stream.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let n = 0;
    const timer = setInterval(() => res.write(`event: token\ndata: {"content":"t${n++}"}\n\n`), 50);
    await streamReleased;
    clearInterval(timer);
    res.end(`event: done\ndata: {"tokens_used":${n},"latency_ms":1}\n\n`);
  });
  extra = await startFakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ response: 'from extra', tool_calls: [], metadata: { tokens_used: 1 } }));
  });
  // The key may use both agents; the gateway starts knowing only one of them.
  const store = await FileKeyStore.open({ path: join(dir, 'keys.json'), logger: silentLogger, watch: false });
  ({ rawKey: key } = await new KeyService({ store, config: parseConfig(configDocument('v2'), 'test', {}) }).createKey({ account: 'acme', plan: 'metered', agents: ['support', 'extra'] }));
  await store.close();
  gateway = await startGatewayProcess(dir, 'gateway', configDocument('v1'));
});

afterAll(async () => {
  releaseStream();
  await gateway?.stop('SIGKILL');
  await support?.close();
  await extra?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('SIGHUP reload', () => {
  it('applies new agents and plan limits to new requests while a stream opened before it flows on to its end', async () => {
    const before = await chat('support');
    expect(before.status).toBe(200);
    expect(before.headers.get('x-ratelimit-limit')).toBe('100');
    expect((await chat('extra')).status).toBe(404);

    const stream = await openSse(`${gateway.url}/agents/support/api/v1/chat/stream`, key, { message: 'long' });
    expect(stream.status).toBe(200);
    while (stream.events.length < 3) await new Promise((resolve) => setTimeout(resolve, 20));

    await rewriteConfig(configDocument('v2'));
    gateway.child.kill('SIGHUP');
    await waitForOutput(/"msg":"config reloaded"/);

    const after = await chat('support');
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-limit')).toBe('7');
    const fromExtra = await chat('extra');
    expect(fromExtra.status).toBe(200);
    expect(await fromExtra.json()).toMatchObject({ response: 'from extra' });

    // The stream kept flowing through the reload: more tokens arrive after it.
    const seenAtReload = stream.events.length;
    while (stream.events.length < seenAtReload + 3) await new Promise((resolve) => setTimeout(resolve, 20));
    releaseStream();
    await stream.ended;
    const names = stream.events.map((e) => e.name);
    expect(names.at(-1)).toBe('done');
    expect(names).not.toContain('error');
    const tokens = stream.events.filter((e) => e.name === 'token').map((e) => (JSON.parse(e.data) as { content: string }).content);
    expect(tokens).toEqual(tokens.map((_, i) => `t${i}`));
    expect(JSON.parse(stream.events.at(-1)!.data)).toMatchObject({ tokens_used: tokens.length });
  });

  it('refuses an invalid file with a log line naming the problem and keeps the running config', async () => {
    await rewriteConfig({ ...configDocument('v1'), stream: { heartbeat: 15 } });
    gateway.child.kill('SIGHUP');
    await waitForOutput(/config reload refused; keeping the running config/);
    const refusal = gateway
      .output()
      .split('\n')
      .find((line) => line.includes('config reload refused'))!;
    expect(JSON.parse(refusal)).toMatchObject({ level: 'error', problems: [expect.stringContaining('stream.heartbeat')] });

    await rewriteConfig('agents: [this is: not valid');
    gateway.child.kill('SIGHUP');
    await waitForOutput(/config reload refused; keeping the running config/, 2);

    // Still v2: the extra agent answers and the plan still allows 7 a minute.
    const fromExtra = await chat('extra');
    expect(fromExtra.status).toBe(200);
    expect(fromExtra.headers.get('x-ratelimit-limit')).toBe('7');
    expect(gateway.child.exitCode).toBeNull();
    expect(await gateway.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
