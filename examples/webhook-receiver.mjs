#!/usr/bin/env node
// A webhook receiver for agent-gateway's signed events (docs/notifications.md): verifies each
// delivery's Webhook-Signature (the docs' Node code), drops repeats by Webhook-Id (delivery is
// at least once), prints one line per event and answers 204; a bad signature gets 401.
//
//   node examples/webhook-receiver.mjs
//
// Environment: WEBHOOK_PORT (default 8099), WEBHOOK_SECRET (default the demo config's),
// WEBHOOK_EXIT_AFTER=N to stop after N verified events.
import { createServer } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';

const port = Number(process.env.WEBHOOK_PORT ?? 8099);
const secret = process.env.WEBHOOK_SECRET ?? 'demo-webhook-secret-change-me';
const exitAfter = Number(process.env.WEBHOOK_EXIT_AFTER ?? 0);

function verifyWebhook(rawBody, header, secret, nowSeconds = Math.floor(Date.now() / 1000)) {
  const parts = (header ?? '').split(',').map((p) => p.trim());
  const t = parts.find((p) => p.startsWith('t='))?.slice(2);
  if (!t || Math.abs(nowSeconds - Number(t)) > 300) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex'));
  return parts.filter((p) => p.startsWith('v1=')).some((p) => {
    const given = Buffer.from(p.slice(3));
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
    if (!verifyWebhook(raw, req.headers['webhook-signature'], secret)) {
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
