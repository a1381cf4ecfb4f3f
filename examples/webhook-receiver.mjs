#!/usr/bin/env node
// A webhook receiver for agent-gateway's signed events (docs/notifications.md): verifies each
// delivery's Standard Webhooks signature (the docs' Node code; `format: standard`, the
// default), drops repeats by webhook-id (delivery is at least once), prints one line per
// event and answers 204; a bad signature gets 401.
//
//   node examples/webhook-receiver.mjs
//
// Environment: WEBHOOK_PORT (default 8099), WEBHOOK_SECRET (default the demo config's),
// WEBHOOK_EXIT_AFTER=N to stop after N verified events.
import { createServer } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';

const port = Number(process.env.WEBHOOK_PORT ?? 8099);
// The demo's raw secret; a whsec_<base64> secret works the same way.
const secret = process.env.WEBHOOK_SECRET ?? 'demo-webhook-secret-change-me';
const exitAfter = Number(process.env.WEBHOOK_EXIT_AFTER ?? 0);

// secret as configured: whsec_<base64> (the decoded bytes are the key) or any other text (its bytes are).
function verifyWebhook(rawBody, headers, secret, nowSeconds = Math.floor(Date.now() / 1000)) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'] ?? '';
  if (!id || !/^\d{1,12}$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 300) return false;
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret);
  const expected = Buffer.from(`v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${rawBody}`).digest('base64')}`);
  return (headers['webhook-signature'] ?? '').split(' ').some((signature) => {
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const seen = new Set();
let verified = 0;
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    if (!verifyWebhook(raw, req.headers, secret)) {
      process.stdout.write(`REJECTED ${req.headers['webhook-id'] ?? '-'}: bad or stale signature\n`);
      res.writeHead(401).end();
      return;
    }
    const id = req.headers['webhook-id'];
    if (!seen.has(id)) {
      seen.add(id);
      const event = JSON.parse(raw);
      process.stdout.write(`verified ${event.type} ${event.id} ${JSON.stringify(event.data)}\n`);
      verified++;
    }
    res.writeHead(204).end();
    if (exitAfter > 0 && verified >= exitAfter) server.close();
  });
});
server.listen(port, '127.0.0.1', () => process.stderr.write(`webhook receiver on http://127.0.0.1:${port}/ (Ctrl-C to stop)\n`));
