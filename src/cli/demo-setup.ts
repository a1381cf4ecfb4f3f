// `npm start` (serve --demo): runs the demo agent behind the gateway and, on a first start
// with an empty key store, creates a demo key and prints a ready-to-paste curl line; on every
// start, prints the dashboard's address, how to sign in, and how to make another key.
import type { Server } from 'node:http';
import { KeyService } from '../keys/key-service.js';
import type { KeyStore } from '../keys/key-store.js';
import type { GatewayConfig } from '../config/schema.js';
import { DEFAULT_CONFIG_PATH } from '../config/load-config.js';
import { startDemoAgent } from '../demo-agent/demo-agent.js';
import { ListenError } from '../http/listen.js';

export const DEMO_AGENT_ID = 'demo';

/** Starts the demo agent where the config's `demo` agent points, if that is a loopback address. */
export async function startDemoUpstream(config: GatewayConfig): Promise<Server | undefined> {
  const agent = config.agents.get(DEMO_AGENT_ID);
  if (!agent) return undefined;
  const url = new URL(agent.upstream);
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') return undefined;
  const port = Number(url.port || 80);
  try {
    return await startDemoAgent({ port, host: '127.0.0.1' });
  } catch (error) {
    throw new ListenError('demo agent', '127.0.0.1', port, (error as NodeJS.ErrnoException).code, error);
  }
}

/** Returns the text to print for a freshly created demo key, or undefined when keys already exist. */
export async function createDemoKeyIfEmpty(config: GatewayConfig, store: KeyStore, gatewayPort: number): Promise<string | undefined> {
  if (!config.agents.has(DEMO_AGENT_ID)) return undefined;
  if ((await store.listPage({ limit: 1, nowMs: Date.now() })).records.length > 0) return undefined;
  const plan = config.plans.has('starter') ? 'starter' : [...config.plans.keys()][0];
  if (!plan) return undefined;
  const service = new KeyService({ store, config });
  const { rawKey, record } = await service.createKey({ account: 'demo', plan, agents: [DEMO_AGENT_ID], name: 'demo key (npm start)' });
  const base = `http://${displayHost(config.listen.host)}:${gatewayPort}/agents/${DEMO_AGENT_ID}/api/v1`;
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

function displayHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/**
 * Printed on every demo start (the raw demo key only on the first): where the dashboard is,
 * how to sign in, and the one command that makes another key.
 */
export function dashboardBanner(options: { config: GatewayConfig; configPath: string; adminPort: number; demoAdminToken: string | undefined; demoAdminTokenFile: string }): string {
  const { config, adminPort, demoAdminToken } = options;
  const plan = config.plans.has('starter') ? 'starter' : ([...config.plans.keys()][0] ?? 'starter');
  const configFlag = options.configPath === DEFAULT_CONFIG_PATH ? '' : ` --config ${options.configPath}`;
  const host = displayHost(config.admin.host);
  const signIn =
    demoAdminToken === undefined
      ? ['  Sign in with one of the admin tokens of admin.tokens in your config.']
      : [
          `  Sign in with the demo admin token (kept in ${options.demoAdminTokenFile}):`,
          `    ${demoAdminToken}`,
          '  The same token opens the admin API (docs/admin-api.md):',
          `    curl http://${host}:${adminPort}/admin/v1/keys -H 'Authorization: Bearer ${demoAdminToken}'`,
          "  The README's examples read it from the environment:",
          `    export AGENTGW_ADMIN_TOKEN=$(cat ${options.demoAdminTokenFile})`,
        ];
  return [
    '',
    `Dashboard: http://${host}:${adminPort}/dashboard/`,
    ...signIn,
    '  Make another key from a terminal:',
    `    node bin/agent-gateway.mjs keys create${configFlag} --account demo --plan ${plan} --agent ${DEMO_AGENT_ID} --name "my key"`,
    '',
  ].join('\n');
}
