// The webhook signature (docs/notifications.md "Verifying a delivery"), checked with the real
// verifiers rather than our own: the `standardwebhooks` library for `format: standard` (the
// default: whsec_ secrets, and a raw secret read with `{ format: "raw" }`), Stripe's library
// for `format: t-v1`; a tampered body, a wrong secret, a stale timestamp and a changed id are
// refused; both secrets of a rotation verify. The Node and Python snippets of the docs are
// extracted and run against the gateway's signatures, and so is examples/webhook-receiver.mjs's copy.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookSecret, type WebhookFormat } from '../../../src/config/notifications-schema.js';
import { decodeWebhookBody, encodeWebhookBody, signatureHeaders } from '../../../src/notifications/webhook-signature.js';

const WHSEC = `whsec_${randomBytes(32).toString('base64')}`;
const WHSEC_OTHER = `whsec_${randomBytes(24).toString('base64')}`;
const RAW = 'raw-secret-0123456789abcdef';
const NOW = Math.floor(Date.now() / 1000);
const event = { id: 'evt_01JDQ3V7Q8K2M4N6P8R0S2T4V6', type: 'key.created' as const, created_at: '2026-11-28T04:28:15.810Z', subject: 'key:key_1', data: { key_id: 'key_1', account: 'acme' } };
const body = encodeWebhookBody(event);
const stripe = new Stripe('sk_test_unused_no_network');

function sign(format: WebhookFormat, secrets: string[], timestampSeconds = NOW, id = event.id, signed = body): Record<string, string> {
  return signatureHeaders(format, { id, body: signed, keys: secrets.map((s) => new WebhookSecret(s).signingKey(format)), timestampSeconds });
}

/** The standardwebhooks library's verdict: the parsed payload, or its error message. */
function standardVerify(secret: string, headers: Record<string, string>, payload = body): unknown {
  try {
    return new Webhook(secret, secret.startsWith('whsec_') ? undefined : { format: 'raw' }).verify(payload, headers);
  } catch (error) {
    return (error as Error).message;
  }
}

function stripeVerify(secret: string, headers: Record<string, string>, payload = body): unknown {
  try {
    return stripe.webhooks.constructEvent(payload, headers['webhook-signature'] ?? '', secret, 300);
  } catch (error) {
    return (error as Error).message;
  }
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-sig-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function docsBlock(marker: string, language: string): Promise<string> {
  const docs = await readFile('docs/notifications.md', 'utf8');
  const start = docs.indexOf(`<!-- ${marker}:`);
  expect(start, marker).toBeGreaterThan(-1);
  const open = docs.indexOf(`\`\`\`${language}\n`, start) + language.length + 4;
  return docs.slice(open, docs.indexOf('\n```', open));
}

describe('webhook body', () => {
  it('encodes exactly {id, type, created_at, data}: no subject, no state', () => {
    expect(Object.keys(JSON.parse(body) as object)).toEqual(['id', 'type', 'created_at', 'data']);
    expect(decodeWebhookBody(body)).toEqual({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
    expect(decodeWebhookBody('[]')).toBeUndefined();
    expect(decodeWebhookBody('{"id":1}')).toBeUndefined();
  });
});

describe('format standard (Standard Webhooks), verified by the standardwebhooks library', () => {
  it('sends webhook-id, webhook-timestamp and webhook-signature: v1,<base64>', () => {
    const headers = sign('standard', [WHSEC]);
    expect(headers).toEqual({ 'webhook-id': event.id, 'webhook-timestamp': String(NOW), 'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/) });
  });

  it.each([
    ['a whsec_ secret (its base64-decoded bytes are the key)', WHSEC],
    ['a raw secret (its bytes are the key; the library reads it with format "raw")', RAW],
  ])('verifies with %s, and refuses tampering, a wrong secret, another id, a stale timestamp', (_name, secret) => {
    expect(standardVerify(secret, sign('standard', [secret]))).toEqual(JSON.parse(body));
    expect(standardVerify(secret, sign('standard', [secret]), body.replace('acme', 'acmf'))).toBe('No matching signature found');
    expect(standardVerify(WHSEC_OTHER, sign('standard', [secret]))).toBe('No matching signature found');
    expect(standardVerify(secret, { ...sign('standard', [secret]), 'webhook-id': 'evt_01JDQ3V7Q8K2M4N6P8R0S2T4V7' })).toBe('No matching signature found');
    expect(standardVerify(secret, sign('standard', [secret], NOW - 400))).toBe('Message timestamp too old');
    expect(standardVerify(secret, { 'webhook-id': event.id, 'webhook-signature': sign('standard', [secret])['webhook-signature']! })).toBe('Missing required headers');
  });

  it('signs with both secrets of a rotation, space-separated, so a receiver holding either accepts', () => {
    const headers = sign('standard', [WHSEC_OTHER, WHSEC]);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(standardVerify(WHSEC, headers)).toEqual(JSON.parse(body));
    expect(standardVerify(WHSEC_OTHER, headers)).toEqual(JSON.parse(body));
    expect(standardVerify(`whsec_${randomBytes(32).toString('base64')}`, headers)).toBe('No matching signature found');
  });

  it('is not what t-v1 sends: the library refuses a t-v1 delivery (the failure issue 49 reported)', () => {
    expect(standardVerify(WHSEC, sign('t-v1', [WHSEC]))).toBe('Missing required headers');
  });
});

describe('format t-v1, verified by Stripe\'s library', () => {
  it('sends webhook-id and webhook-signature: t=<unix s>,v1=<hex>, the secret as written being the key', () => {
    const headers = sign('t-v1', [WHSEC]);
    expect(headers).toEqual({ 'webhook-id': event.id, 'webhook-signature': `t=${NOW},v1=${headers['webhook-signature']!.split('v1=')[1]}` });
    expect(headers['webhook-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(stripeVerify(WHSEC, headers)).toMatchObject({ id: event.id, type: 'key.created' });
    expect(stripeVerify(RAW, sign('t-v1', [RAW]))).toMatchObject({ id: event.id });
  });

  it('refuses tampering, a wrong secret and a stale timestamp; accepts either secret of a rotation', () => {
    expect(stripeVerify(WHSEC, sign('t-v1', [WHSEC]), body.replace('acme', 'acmf'))).toMatch(/No signatures found matching/);
    expect(stripeVerify(WHSEC_OTHER, sign('t-v1', [WHSEC]))).toMatch(/No signatures found matching/);
    expect(stripeVerify(WHSEC, sign('t-v1', [WHSEC], NOW - 400))).toMatch(/Timestamp outside the tolerance zone/);
    const rotating = sign('t-v1', [WHSEC_OTHER, WHSEC]);
    expect(rotating['webhook-signature']!.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    expect(stripeVerify(WHSEC, rotating)).toMatchObject({ id: event.id });
    expect(stripeVerify(WHSEC_OTHER, rotating)).toMatchObject({ id: event.id });
  });
});

describe("the docs' verification code", () => {
  it("the Node snippet accepts the gateway's standard signatures (whsec_ and raw secrets, a rotation) and refuses bad ones", async () => {
    const file = join(dir, 'verify.mjs');
    await writeFile(file, await docsBlock('verify-node', 'js'));
    const { verifyWebhook: docsVerify } = (await import(pathToFileURL(file).href)) as { verifyWebhook: (b: string, h: Record<string, string>, s: string, now?: number) => boolean };
    expect(docsVerify(body, sign('standard', [WHSEC]), WHSEC, NOW)).toBe(true);
    expect(docsVerify(body, sign('standard', [RAW]), RAW, NOW)).toBe(true);
    expect(docsVerify(body, sign('standard', [WHSEC_OTHER, WHSEC]), WHSEC, NOW)).toBe(true);
    expect(docsVerify(`${body} `, sign('standard', [WHSEC]), WHSEC, NOW)).toBe(false);
    expect(docsVerify(body, sign('standard', [WHSEC]), WHSEC_OTHER, NOW)).toBe(false);
    expect(docsVerify(body, sign('standard', [WHSEC], NOW - 400), WHSEC, NOW)).toBe(false);
    expect(docsVerify(body, { ...sign('standard', [WHSEC]), 'webhook-id': 'evt_other' }, WHSEC, NOW)).toBe(false);
    expect(docsVerify(body, {}, WHSEC, NOW)).toBe(false);
    // The example receiver carries the same function.
    expect(await readFile('examples/webhook-receiver.mjs', 'utf8')).toContain((await docsBlock('verify-node', 'js')).split('\n').slice(2).join('\n').replace('export function', 'function'));
  });

  it("the Python snippet accepts the gateway's standard signatures and refuses bad ones", async () => {
    const file = join(dir, 'verify.py');
    const cases = [
      [body, sign('standard', [WHSEC]), WHSEC, true],
      [body, sign('standard', [RAW]), RAW, true],
      [body, sign('standard', [WHSEC_OTHER, WHSEC]), WHSEC, true],
      [`${body} `, sign('standard', [WHSEC]), WHSEC, false],
      [body, sign('standard', [WHSEC]), WHSEC_OTHER, false],
      [body, sign('standard', [WHSEC], NOW - 400), WHSEC, false],
    ] as const;
    await writeFile(file, `${await docsBlock('verify-python', 'python')}\nimport json, sys\nfor b, h, s, want in json.loads(sys.argv[1]):\n    got = verify_webhook(b.encode(), h, s, now=${NOW})\n    print("ok" if got == want else "MISMATCH", got)\n`);
    const { stdout } = await promisify(execFile)('python3', [file, JSON.stringify(cases)]);
    expect(stdout.trim().split('\n').map((line) => line.split(' ')[0])).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
  });
});
