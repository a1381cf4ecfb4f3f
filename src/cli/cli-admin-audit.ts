// The CLI's key writes in the admin audit trail (docs/admin-api.md "Admin audit trail"): the same
// records, in the same sinks, as the admin API's, with the actor `cli:<os user>` and a request
// id of its own per command. Written straight to the sinks (no spool: see DirectAuditWriter).
import { userInfo } from 'node:os';
import { AdminAuditLog, DirectAuditWriter, type AdminWriteOrigin } from '../audit/admin-audit-log.js';
import { adminAuditSinks } from '../audit/open-audit-log.js';
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { chooseRequestId } from '../http/request-id.js';
import { silentLogger } from '../logger.js';
import { createRedisClientFactory } from '../redis/redis-client.js';

/** `cli:<the OS user running the command>` (from the environment when the user database has no entry). */
export function cliActor(env: NodeJS.ProcessEnv = process.env): string {
  let name: string | undefined;
  try {
    name = userInfo().username;
  } catch {
    name = env.USER ?? env.LOGNAME;
  }
  return `cli:${name || 'unknown'}`;
}

export interface CliAdminAudit {
  log: AdminAuditLog;
  origin: AdminWriteOrigin;
  close(): Promise<void>;
}

/** The admin trail the config names, for one CLI command; close() also ends its Redis connection. */
export async function openCliAdminAudit(config: GatewayConfig, clock: Clock): Promise<CliAdminAudit> {
  const factory = config.audit.adminRedisStream && config.redis ? createRedisClientFactory(config.redis, silentLogger) : undefined;
  const redis = factory?.connect('cli-read', 'agentgw-cli-admin-audit');
  try {
    if (factory && redis) await factory.whenReady(redis, 5_000);
    const log = new AdminAuditLog(new DirectAuditWriter(adminAuditSinks(config, { redis })), clock);
    return {
      log,
      origin: { request_id: chooseRequestId(undefined), actor: cliActor() },
      async close() {
        await log.close();
        redis?.disconnect();
      },
    };
  } catch (error) {
    redis?.disconnect();
    throw error;
  }
}
