#!/usr/bin/env node
// A small consumer of the agent-gateway audit stream (docs/audit.md): reads with a consumer
// group, drops duplicates by record `id` (delivery is at-least-once), acknowledges each entry,
// and reclaims entries a crashed consumer of the same group left pending.
//
//   REDIS_URL=redis://127.0.0.1:6379/0 node examples/audit-consumer.mjs
//
// Environment: REDIS_URL, AUDIT_STREAM (default agentgw:audit), AUDIT_GROUP (default billing),
// AUDIT_CONSUMER (default <hostname>-<pid>), AUDIT_CLAIM_IDLE_MS (default 60000),
// AUDIT_EXIT_WHEN_IDLE=1 to stop when caught up.
import { hostname } from 'node:os';
import { Redis } from 'ioredis';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const stream = process.env.AUDIT_STREAM ?? 'agentgw:audit';
const group = process.env.AUDIT_GROUP ?? 'billing';
const consumer = process.env.AUDIT_CONSUMER ?? `${hostname()}-${process.pid}`;
const exitWhenIdle = process.env.AUDIT_EXIT_WHEN_IDLE === '1';
// Entries pending this long on another consumer are taken over (that consumer likely died).
const CLAIM_IDLE_MS = Number(process.env.AUDIT_CLAIM_IDLE_MS ?? 60_000);
// Ids already handled. A real consumer keeps this where its results live (e.g. a unique key
// on `id` in its database, or SET NX with a TTL longer than any outage); in memory for the demo.
const DEDUPE_TTL_MS = 24 * 60 * 60 * 1000;

const redis = new Redis(url);
const seen = new Map(); // id -> first seen (ms)
let stopping = false;
process.once('SIGINT', () => (stopping = true));
process.once('SIGTERM', () => (stopping = true));

/** Your work goes here: e.g. add tokens_used to the account's bill. */
function handle(record) {
  process.stdout.write(`${record.ts} ${record.account} ${record.key_id} ${record.agent} ${record.route} ${record.status} ${record.outcome} tokens=${record.tokens_used ?? '?'}\n`);
}

async function ensureGroup() {
  try {
    // "0": a new group starts at the beginning of the stream; "$" would take only new entries.
    await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
  } catch (error) {
    if (!String(error.message).includes('BUSYGROUP')) throw error;
  }
}

async function processEntries(entries) {
  for (const [entryId, fields] of entries) {
    const json = fieldOf(fields, 'record');
    if (json !== undefined) {
      const record = JSON.parse(json);
      if (!seen.has(record.id)) {
        handle(record);
        seen.set(record.id, Date.now());
      }
    }
    // Ack after handling: a crash before this line means redelivery, and the dedupe above absorbs it.
    await redis.xack(stream, group, entryId);
  }
}

function fieldOf(fields, name) {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

function forgetOld() {
  const cutoff = Date.now() - DEDUPE_TTL_MS;
  for (const [id, at] of seen) {
    if (at >= cutoff) break; // Map keeps insertion order
    seen.delete(id);
  }
}

async function main() {
  await ensureGroup();
  // 1. Our own pending entries (read but not acked before a restart): id "0" reads them.
  for (;;) {
    const reply = await redis.xreadgroup('GROUP', group, consumer, 'COUNT', 100, 'STREAMS', stream, '0');
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) break;
    await processEntries(entries);
  }
  let lastClaim = 0;
  while (!stopping) {
    // 2. Now and then, take over entries another consumer left pending too long.
    if (Date.now() - lastClaim > CLAIM_IDLE_MS / 2) {
      lastClaim = Date.now();
      let cursor = '0-0';
      do {
        const [next, claimed] = await redis.xautoclaim(stream, group, consumer, CLAIM_IDLE_MS, cursor, 'COUNT', 100);
        await processEntries(claimed.filter((entry) => entry && entry[1]));
        cursor = next;
      } while (cursor !== '0-0' && !stopping);
    }
    // 3. New entries (">"), blocking up to 2 s.
    const reply = await redis.xreadgroup('GROUP', group, consumer, 'COUNT', 100, 'BLOCK', 2_000, 'STREAMS', stream, '>');
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length > 0) await processEntries(entries);
    else if (exitWhenIdle) break;
    forgetOld();
  }
  await redis.quit();
}

main().catch((error) => {
  process.stderr.write(`audit-consumer: ${error.message}\n`);
  redis.disconnect();
  process.exit(1);
});
