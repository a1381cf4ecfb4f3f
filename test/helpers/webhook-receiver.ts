// A real HTTP webhook receiver for tests: records every delivery (headers, raw body, whether
// its signature verified against the given secrets) and answers as the test says: a status,
// a number of failures first, or never (a black hole that holds the socket open). Signatures
// are checked with the real verifiers: the `standardwebhooks` library (the default format;
// a secret without the whsec_ prefix read as raw bytes, as docs/notifications.md says) and
// Stripe's (`format: 't-v1'`).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { decodeWebhookBody, type WebhookBody } from '../../src/notifications/webhook-signature.js';

export type ReceiverFormat = 'standard' | 't-v1';

const stripe = new Stripe('sk_test_unused_no_network');

/** Whether `raw` with these headers verifies under any of `secrets`, by the format's real library (5-minute tolerance). */
export function verifiedByLibrary(format: ReceiverFormat, raw: string, headers: Record<string, string | undefined>, secrets: readonly string[]): boolean {
  return secrets.some((secret) => {
    try {
      if (format === 't-v1') stripe.webhooks.constructEvent(raw, headers['webhook-signature'] ?? '', secret, 300);
      else new Webhook(secret, secret.startsWith('whsec_') ? undefined : { format: 'raw' }).verify(raw, { 'webhook-id': headers['webhook-id'] ?? '', 'webhook-timestamp': headers['webhook-timestamp'] ?? '', 'webhook-signature': headers['webhook-signature'] ?? '' });
      return true;
    } catch {
      return false;
    }
  });
}

export interface ReceivedWebhook {
  id: string | undefined;
  signature: string | undefined;
  timestamp: string | undefined;
  contentType: string | undefined;
  raw: string;
  body: WebhookBody | undefined;
  verified: boolean;
  status: number;
}

export type ReceiverMode = { kind: 'status'; status: number } | { kind: 'fail-first'; failures: number } | { kind: 'black-hole' };

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** Sockets open right now (a black hole's pile-up). */
  openSockets(): number;
  mode: ReceiverMode;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secrets: string[], options: { port?: number; mode?: ReceiverMode; format?: ReceiverFormat } = {}): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const sockets = new Set<Socket>();
  const failuresById = new Map<string, number>();
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    received,
    mode: options.mode ?? { kind: 'status', status: 200 },
    openSockets: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const mode = receiver.mode;
      if (mode.kind === 'black-hole') return;
      const raw = Buffer.concat(chunks).toString('utf8');
      const id = req.headers['webhook-id'] as string | undefined;
      const signature = req.headers['webhook-signature'] as string | undefined;
      const timestamp = req.headers['webhook-timestamp'] as string | undefined;
      const verified = verifiedByLibrary(options.format ?? 'standard', raw, { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, secrets);
      const body = verified ? decodeWebhookBody(raw) : undefined;
      let status = mode.kind === 'status' ? mode.status : 200;
      if (mode.kind === 'fail-first') {
        const failed = failuresById.get(id ?? '') ?? 0;
        if (failed < mode.failures) {
          failuresById.set(id ?? '', failed + 1);
          status = 503;
        }
      }
      received.push({ id, signature, timestamp, contentType: req.headers['content-type'], raw, body, verified: body !== undefined, status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  receiver.port = port;
  receiver.url = `http://127.0.0.1:${port}/hooks/agentgw`;
  return receiver;
}

/** The deliveries the receiver answered 2xx, by event id. */
export function deliveredIds(receiver: WebhookReceiver): string[] {
  return receiver.received.filter((r) => r.status >= 200 && r.status < 300).map((r) => r.id ?? '');
}
