// The webhook signature (docs/notifications.md "Verifying a delivery"): the gateway's signer
// and the receivers' verifier agree; a tampered body, a wrong secret, a stale or future
// timestamp and a malformed header are refused; both secrets of a rotation verify. The Node
// and Python snippets of the docs are extracted and run against the gateway's signatures, and
// so is examples/webhook-receiver.mjs's copy.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWebhookBody, encodeWebhookBody, signWebhook, verifyWebhook } from '../../../src/notifications/webhook-signature.js';

const SECRET = 'whsec-test-0123456789abcdef';
const OTHER = 'whsec-other-0123456789abcdef';
const NOW = 1_795_840_095;
const event = { id: 'evt_01JDQ3V7Q8K2M4N6P8R0S2T4V6', type: 'key.created' as const, created_at: '2026-11-28T04:28:15.810Z', subject: 'key:key_1', data: { key_id: 'key_1', account: 'acme' } };
const body = encodeWebhookBody(event);

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

describe('webhook signature', () => {
  it('encodes exactly {id, type, created_at, data}: no subject, no state', () => {
    expect(Object.keys(JSON.parse(body) as object)).toEqual(['id', 'type', 'created_at', 'data']);
    expect(decodeWebhookBody(body)).toEqual({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
    expect(decodeWebhookBody('[]')).toBeUndefined();
    expect(decodeWebhookBody('{"id":1}')).toBeUndefined();
  });

  it('verifies what it signs, and refuses tampering, a wrong secret, a stale timestamp, a malformed header', () => {
    const header = signWebhook(body, [SECRET], NOW);
    expect(header).toMatch(/^t=1795840095,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook({ body, header, secrets: [SECRET], nowSeconds: NOW + 299 })).toMatchObject({ ok: true, body: { id: event.id } });
    expect(verifyWebhook({ body: body.replace('acme', 'acmf'), header, secrets: [SECRET], nowSeconds: NOW })).toEqual({ ok: false, reason: 'no_matching_signature' });
    expect(verifyWebhook({ body, header, secrets: [OTHER], nowSeconds: NOW })).toEqual({ ok: false, reason: 'no_matching_signature' });
    expect(verifyWebhook({ body, header, secrets: [SECRET], nowSeconds: NOW + 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
    expect(verifyWebhook({ body, header, secrets: [SECRET], nowSeconds: NOW - 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
    for (const bad of [undefined, '', 'v1=abc', `t=${NOW}`, `t=x,v1=${'0'.repeat(64)}`, `t=${NOW},t=${NOW},v1=00`]) {
      expect(verifyWebhook({ body, header: bad, secrets: [SECRET], nowSeconds: NOW }), String(bad)).toEqual({ ok: false, reason: 'malformed_header' });
    }
    // A signature of another length is compared without throwing.
    expect(verifyWebhook({ body, header: `t=${NOW},v1=abc`, secrets: [SECRET], nowSeconds: NOW })).toEqual({ ok: false, reason: 'no_matching_signature' });
  });

  it('signs with every secret of a rotation, so a receiver holding either accepts', () => {
    const header = signWebhook(body, [OTHER, SECRET], NOW);
    expect(header.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    expect(verifyWebhook({ body, header, secrets: [SECRET], nowSeconds: NOW }).ok).toBe(true);
    expect(verifyWebhook({ body, header, secrets: [OTHER], nowSeconds: NOW }).ok).toBe(true);
    expect(verifyWebhook({ body, header, secrets: ['whsec-third-0123456789abcdef'], nowSeconds: NOW }).ok).toBe(false);
  });

  it("the docs' Node snippet accepts the gateway's signatures and refuses bad ones", async () => {
    const file = join(dir, 'verify.mjs');
    await writeFile(file, await docsBlock('verify-node', 'js'));
    const { verifyWebhook: docsVerify } = (await import(pathToFileURL(file).href)) as { verifyWebhook: (b: string, h: string, s: string, now?: number) => boolean };
    expect(docsVerify(body, signWebhook(body, [SECRET], NOW), SECRET, NOW)).toBe(true);
    expect(docsVerify(body, signWebhook(body, [OTHER, SECRET], NOW), SECRET, NOW)).toBe(true);
    expect(docsVerify(`${body} `, signWebhook(body, [SECRET], NOW), SECRET, NOW)).toBe(false);
    expect(docsVerify(body, signWebhook(body, [SECRET], NOW), OTHER, NOW)).toBe(false);
    expect(docsVerify(body, signWebhook(body, [SECRET], NOW - 400), SECRET, NOW)).toBe(false);
    // The example receiver carries the same function.
    expect(await readFile('examples/webhook-receiver.mjs', 'utf8')).toContain((await docsBlock('verify-node', 'js')).split('\n').slice(2).join('\n').replace('export function', 'function'));
  });

  it("the docs' Python snippet accepts the gateway's signatures and refuses bad ones", async () => {
    const file = join(dir, 'verify.py');
    const cases = [
      [body, signWebhook(body, [SECRET], NOW), SECRET, true],
      [body, signWebhook(body, [OTHER, SECRET], NOW), SECRET, true],
      [`${body} `, signWebhook(body, [SECRET], NOW), SECRET, false],
      [body, signWebhook(body, [SECRET], NOW), OTHER, false],
      [body, signWebhook(body, [SECRET], NOW - 400), SECRET, false],
    ] as const;
    await writeFile(file, `${await docsBlock('verify-python', 'python')}\nimport json, sys\nfor b, h, s, want in json.loads(sys.argv[1]):\n    got = verify_webhook(b.encode(), h, s, now=${NOW})\n    print("ok" if got == want else "MISMATCH", got)\n`);
    const { stdout } = await promisify(execFile)('python3', [file, JSON.stringify(cases)]);
    expect(stdout.trim().split('\n').map((line) => line.split(' ')[0])).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
  });
});
