// `npm start` (serve --demo): runs the demo agent behind the gateway and, on a first start
// with an empty key store, creates a demo key and prints a ready-to-paste curl line.
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { KeyService } from '../keys/key-service.js';
import type { KeyStore } from '../keys/key-store.js';
import { adminTokenDigest, type GatewayConfig } from '../config/schema.js';
import { startDemoAgent } from '../demo-agent/demo-agent.js';

export const DEMO_AGENT_ID = 'demo';

/** Starts the demo agent where the config's `demo` agent points, if that is a loopback address. */
export async function startDemoUpstream(config: GatewayConfig): Promise<Server | undefined> {
  const agent = config.agents.get(DEMO_AGENT_ID);
  if (!agent) return undefined;
  const url = new URL(agent.upstream);
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') return undefined;
  return startDemoAgent({ port: Number(url.port || 80), host: '127.0.0.1' });
}

/** Returns the text to print for a freshly created demo key, or undefined when keys already exist. */
export async function createDemoKeyIfEmpty(config: GatewayConfig, store: KeyStore, gatewayPort: number): Promise<string | undefined> {
  if (!config.agents.has(DEMO_AGENT_ID)) return undefined;
  if ((await store.list()).length > 0) return undefined;
  const plan = config.plans.has('starter') ? 'starter' : [...config.plans.keys()][0];
  if (!plan) return undefined;
  const service = new KeyService({ store, config });
  const { rawKey, record } = await service.createKey({ account: 'demo', plan, agents: [DEMO_AGENT_ID], name: 'demo key (npm start)' });
  const host = config.listen.host === '0.0.0.0' || config.listen.host === '::' ? '127.0.0.1' : config.listen.host;
  const base = `http://${host}:${gatewayPort}/agents/${DEMO_AGENT_ID}/api/v1`;
  return [
    '',
    `Created a demo API key (${record.keyId}, plan ${plan}). It is shown only this once:`,
    `  ${rawKey}`,
    '',
    'Try it:',
    `  curl -N ${base}/chat/stream -H 'Authorization: Bearer ${rawKey}' -H 'Content-Type: application/json' -d '{"message":"Hello, agent"}'`,
    `  curl ${base}/chat -H 'Authorization: Bearer ${rawKey}' -H 'Content-Type: application/json' -d '{"message":"What is 6 * 7?","tools":["calculator"]}'`,
    '',
  ].join('\n');
}

/**
 * `serve --demo` with no admin token configured: a fresh admin token for this run (only its
 * digest is kept in the config), so the admin API can be tried at once. Undefined when the
 * config has tokens of its own.
 */
export function withDemoAdminToken(config: GatewayConfig): { config: GatewayConfig; token: string } | undefined {
  if (config.admin.tokens.length > 0) return undefined;
  const token = `agw_demo_${randomBytes(24).toString('base64url')}`;
  const tokens = [{ name: 'demo', role: 'admin' as const, sha256: adminTokenDigest(token) }];
  return { config: { ...config, admin: { ...config.admin, tokens } }, token };
}

export function demoAdminBanner(token: string, config: GatewayConfig, adminPort: number): string {
  const host = config.admin.host === '0.0.0.0' || config.admin.host === '::' ? '127.0.0.1' : config.admin.host;
  return [
    '',
    'Created an admin token for this run (config admin.tokens is empty); it is shown only here:',
    `  ${token}`,
    'Try the admin API (docs/admin-api.md):',
    `  curl http://${host}:${adminPort}/admin/v1/keys -H 'Authorization: Bearer ${token}'`,
    '',
  ].join('\n');
}
