// Keys for a gateway process, made before it starts through the same library code as
// `agent-gateway keys create`, in whatever store its config names.
import { KeyService } from '../../../src/keys/key-service.js';
import { openCliKeyStore } from '../../../src/cli/keys.js';
import { parseConfig } from '../../../src/config/load-config.js';

export async function createKeys(document: Record<string, unknown>, keys: Array<{ account: string; plan: string; agents: string[] }>): Promise<string[]> {
  // Set-up, not what a fault test measures: the gateway's own (often tight) command_timeout
  // would fail the set-up on a loaded machine, so the keys are written with a generous one.
  const redis = document.redis as Record<string, unknown> | undefined;
  const setup = redis === undefined ? document : { ...document, redis: { ...redis, command_timeout: '10s' } };
  const config = parseConfig({ ...setup, listen: { port: 0 }, admin: { port: 0 } }, 'fault-test', {});
  const store = await openCliKeyStore(config);
  try {
    const service = new KeyService({ store, config });
    const raw: string[] = [];
    for (const input of keys) raw.push((await service.createKey(input)).rawKey);
    return raw;
  } finally {
    await store.close();
  }
}
