import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAuditLog } from '../../../src/audit/open-audit-log.js';
import { auditSourceOf } from '../../../src/audit/read-audit-records.js';
import { systemClock } from '../../../src/clock.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { silentLogger } from '../../../src/logger.js';
import { idsInFile, makeRecords } from '../../helpers/audit-records.js';
import { tempDir } from '../../helpers/files.js';

const agents = { support: { upstream: 'http://127.0.0.1:8081/api/v1' } };

describe('openAuditLog', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(() => cleanup());

  it('writes the configured audit file', async () => {
    const file = join(dir, 'audit.jsonl');
    const config = parseConfig({ agents, audit: { file, spool: join(dir, 'spool.jsonl') } }, 'test', {});
    const log = openAuditLog(config, { logger: silentLogger, clock: systemClock });
    for (const record of makeRecords(0, 3)) log.record(record);
    await log.close();
    expect(await idsInFile(file)).toEqual(makeRecords(0, 3).map((r) => r.id));
  });

  it('refuses a Redis stream sink without a Redis client', () => {
    const config = parseConfig({ agents, redis: {}, audit: { redis_stream: 'agentgw:audit' } }, 'test', {});
    expect(() => openAuditLog(config, { logger: silentLogger, clock: systemClock })).toThrow(/Redis client/);
  });

  it('tails the Redis stream when one is configured, else the file', () => {
    expect(auditSourceOf(parseConfig({ agents }, 'test', {}))).toEqual({ kind: 'file', path: 'var/audit.jsonl' });
    expect(auditSourceOf(parseConfig({ agents, redis: { url: 'redis://h:1/0' }, audit: { redis_stream: 's', file: 'f.jsonl' } }, 'test', {}))).toEqual({
      kind: 'redis',
      address: 'redis://h:1/0',
      streamKey: 's',
    });
  });
});
