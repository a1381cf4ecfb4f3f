// The built CLI with the observability of issue 37 (docs/observability.md, docs/audit.md
// "PostgreSQL"): tracing turned on by the standard OTEL_* variables alone, exporting to a
// real OTLP receiver; and the PostgreSQL sink of a gateway process SIGKILLed under load,
// whose journal, read back by the next process, leaves every answered request's row in the
// table exactly once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openCliKeyStore } from '../../src/cli/keys.js';
import { KeyService } from '../../src/keys/key-service.js';
import { parseConfig } from '../../src/config/load-config.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { dropTable, POSTGRES_URL, sql, uniqueTable } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let upstream: FakeUpstream;
let rawKey: string;
const processes: GatewayProcess[] = [];
const tables: string[] = [];

function documentFor(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    keys: { store: 'file', file: join(dir, 'keys.json') },
    plans: { scale: { windows: [] } },
    agents: { support: { upstream: upstream.baseUrl } },
    shutdown_grace: '2s',
    ...extra,
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'audit-spool.jsonl'), ...(extra.audit as object | undefined) },
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-observability-'));
  upstream = await startFakeUpstream();
  const config = parseConfig({ ...documentFor(), listen: { port: 0 }, admin: { port: 0 } }, 'test', {});
  const store = await openCliKeyStore(config);
  rawKey = (await new KeyService({ store, config }).createKey({ account: 'obs-acct', plan: 'scale', agents: ['support'] })).rawKey;
  await store.close();
});

afterEach(async () => {
  for (const gateway of processes.splice(0)) await gateway.stop('SIGKILL');
  for (const table of tables.splice(0)) await dropTable(table);
});

afterAll(async () => {
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// Waits below allow for a loaded machine; the test's own deadline is longer than any of them.
describe('the built gateway with observability', { timeout: 180_000 }, () => {
  it('traces when only the OTEL_* variables name the collector', async () => {
    const receiver: OtlpReceiver = await startOtlpReceiver();
    try {
      const gateway = await startGatewayProcess(dir, 'otel-env', documentFor(), { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-from-env' });
      processes.push(gateway);
      const res = await postChat(gateway.url, '/agents/support/api/v1/chat/stream', rawKey, { message: 'hi' });
      expect(res.status).toBe(200);
      await res.text();
      const traceparent = String(upstream.requests.at(-1)!.headers.traceparent);
      const traceId = traceparent.split('-')[1]!;
      const server = await waitFor('the server span', () => receiver.spans.find((span) => span.traceId === traceId && span.kind === 2), 30_000);
      expect(server.name).toBe('invoke_agent support');
      expect(server.resource['service.name']).toBe('gateway-from-env');
      const client = receiver.spans.find((span) => span.traceId === traceId && span.kind === 3);
      expect(traceparent).toBe(`00-${traceId}-${client?.spanId}-01`);
      expect(gateway.output()).toContain('"msg":"tracing on"');
    } finally {
      await receiver.close();
    }
  });

  it('loses no answered request\'s row and writes none twice when the process is SIGKILLed', async () => {
    const table = uniqueTable('sigkill');
    tables.push(table);
    const document = documentFor({ audit: { postgres: { url: POSTGRES_URL, table } } });
    const answered: string[] = [];
    for (let round = 0; round < 3; round++) {
      const gateway = await startGatewayProcess(dir, `pg-kill-${round}`, document);
      processes.push(gateway);
      // Four clients back to back; the kill comes while they are sending.
      let stop = false;
      const clients = Array.from({ length: 4 }, async (_, client) => {
        for (let n = 0; !stop; n++) {
          const id = `kill-${round}-${client}-${n}`;
          try {
            const res = await postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: 'hi' }, { 'x-request-id': id });
            const body = await res.text();
            if (res.status === 200 && body.length > 0) answered.push(id);
          } catch {
            return;
          }
        }
      });
      await waitFor('answers before the kill', () => answered.filter((id) => id.startsWith(`kill-${round}-`)).length >= 20, 30_000);
      await gateway.stop('SIGKILL');
      processes.splice(processes.indexOf(gateway), 1);
      stop = true;
      await Promise.all(clients);
    }
    // The last start reads back what the killed ones left in the journal and the spool.
    const last = await startGatewayProcess(dir, 'pg-kill-final', document);
    processes.push(last);
    const rows = await waitFor(
      'every answered request in the table',
      async () => {
        const found = await sql<{ request_id: string }>(`SELECT request_id FROM "${table}"`).catch(() => []);
        const ids = new Set(found.map((row) => row.request_id));
        return answered.every((id) => ids.has(id)) ? found : undefined;
      },
      60_000,
    );
    // Each answered request once (its record's id is the primary key; its X-Request-Id was unique per request).
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.request_id, (counts.get(row.request_id) ?? 0) + 1);
    expect(answered.filter((id) => counts.get(id) !== 1)).toEqual([]);
    expect(answered.length).toBeGreaterThanOrEqual(60);
  });
});
