// The gateway in process, on a real port, with its real stores and a config built per test.
// Logs are captured so tests can search everything the gateway printed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { KeyService, type CreateKeyInput } from '../../src/keys/key-service.js';
import { startGateway, type RunningGateway, type StartGatewayOptions } from '../../src/gateway.js';
import type { Clock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { REDACT_PATHS, type Logger } from '../../src/logger.js';
import { checkAnswersFrom } from './openapi-answers.js';

export interface TestGateway {
  url: string;
  adminUrl: string;
  config: GatewayConfig;
  running: RunningGateway;
  dir: string;
  logs: string[];
  /** The root logger the gateway was given (its level is what a reload sets). */
  logger: Logger;
  createKey(input?: Partial<CreateKeyInput>): Promise<{ rawKey: string; keyId: string }>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Agent id → upstream base URL (…/api/v1), or a full agent block. */
  agents: Record<string, string | Record<string, unknown>>;
  /** Extra top-level config keys, as in the YAML file (durations as strings). */
  config?: Record<string, unknown>;
  redisUrl?: string;
  clock?: Clock;
  /** Where webhook events go instead of the configured outbox (test/helpers/recording-notifier.ts). */
  notifier?: StartGatewayOptions['notifier'];
}

export async function startTestGateway(options: TestGatewayOptions): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-test-'));
  const agents = Object.fromEntries(Object.entries(options.agents).map(([id, agent]) => [id, typeof agent === 'string' ? { upstream: agent } : agent]));
  const extra = options.config ?? {};
  const document: Record<string, unknown> = {
    listen: { host: '127.0.0.1', port: 0, ...(extra.listen as object | undefined) },
    admin: { host: '127.0.0.1', port: 0 },
    keys: { file: join(dir, 'keys.json'), ...(extra.keys as object | undefined) },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'audit-spool.jsonl'), ...(extra.audit as object | undefined) },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => !['listen', 'keys', 'audit'].includes(k))),
    agents,
  };
  if (options.redisUrl) document.redis = { url: options.redisUrl, ...(extra.redis as object | undefined) };
  const config = parseConfig(document, 'test', {});

  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString('utf8'));
      callback();
    },
  });
  const logger = pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
  const running = await startGateway(config, { logger, clock: options.clock, notifier: options.notifier });
  const service = new KeyService({ store: running.keyStore, config, clock: options.clock });
  const url = `http://127.0.0.1:${running.port}`;
  const adminUrl = `http://127.0.0.1:${running.adminPort}`;
  // Every answer the test fetches from either listener is checked against the OpenAPI documents.
  const unregister = [checkAnswersFrom(url, 'agent-chat'), checkAnswersFrom(adminUrl, 'admin')];

  return {
    url,
    adminUrl,
    config,
    running,
    dir,
    logs,
    logger,
    async createKey(input = {}) {
      const created = await service.createKey({
        account: input.account ?? 'acme',
        plan: input.plan ?? 'scale',
        agents: input.agents ?? [...config.agents.keys()],
        name: input.name,
        expiresInMs: input.expiresInMs,
        ...(input.limits === undefined ? {} : { limits: input.limits }),
        ...(input.tools === undefined ? {} : { tools: input.tools }),
        ...(input.mcp === undefined ? {} : { mcp: input.mcp }),
      });
      return { rawKey: created.rawKey, keyId: created.record.keyId };
    },
    async close() {
      for (const stop of unregister) stop();
      await running.close(500);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** POST JSON to a chat route with a key. */
export function postChat(gatewayUrl: string, path: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gatewayUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
