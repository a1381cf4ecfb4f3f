// The cluster primary's line writer (src/cli/primary-log.ts) writes the lines logger.ts's pino
// logger writes — compared line for line against a real one — filters by log.level (changed
// by a reload), and renders for a terminal as every other process does.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrimaryLog } from '../../../src/cli/primary-log.js';
import { createLogger, flushLogger } from '../../../src/logger.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-primary-log-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const lines = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
const withoutTime = ({ time, ...rest }: Record<string, unknown>) => {
  expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return rest;
};

describe("the primary's log lines", () => {
  it('are the lines pino writes for the same entries, in a file', async () => {
    const ours = createPrimaryLog({ level: 'info', file: join(dir, 'primary.jsonl') });
    const pinos = createLogger({ level: 'info', file: join(dir, 'pino.jsonl'), base: { role: 'primary' } });
    for (const log of [ours, pinos]) {
      log.info({ port: 8080, admin_port: 9090, workers: 2 }, 'gateway listening');
      log.error({ worker: 1, code: null, signal: 'SIGKILL', admin_listener: 'down until worker 1 is back' }, 'worker died; replacing it');
    }
    await ours.flush();
    await flushLogger(pinos);
    const written = (await lines(join(dir, 'primary.jsonl'))).map(withoutTime);
    expect(written).toEqual((await lines(join(dir, 'pino.jsonl'))).map(withoutTime));
    expect(written.map((line) => [line.level, line.role, line.pid, line.msg])).toEqual([
      ['info', 'primary', process.pid, 'gateway listening'],
      ['error', 'primary', process.pid, 'worker died; replacing it'],
    ]);
  });

  it('writes only the levels log.level lets through, and follows a new level', async () => {
    const path = join(dir, 'levels.jsonl');
    const log = createPrimaryLog({ level: 'warn', file: path });
    log.info({ n: 1 }, 'not written at warn');
    log.error({ n: 2 }, 'written at warn');
    log.level = 'info';
    log.info({ n: 3 }, 'written at info');
    log.level = 'silent';
    log.error({ n: 4 }, 'not written when silent');
    await log.flush();
    expect((await lines(path)).map((line) => line.n)).toEqual([2, 3]);
  });

  it('renders for a terminal as logger.ts does', async () => {
    let text = '';
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    const log = createPrimaryLog({ level: 'info', pretty: true, out });
    log.info({ signal: 'SIGTERM', grace_ms: 2000 }, 'shutting down');
    await log.flush();
    expect(text).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  shutting down role=primary signal=SIGTERM grace_ms=2000\n$/);
  });
});
