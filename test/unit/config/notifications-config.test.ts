// The notifications block (docs/notifications.md "Configuration"): defaults, the secret from
// ${ENV} and never printed, and what it refuses (a URL that is not one, an empty or short
// secret, thresholds outside (0, 1] or out of order, unknown event types).
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
import { defaultWebhookId } from '../../../src/config/notifications-schema.js';
import { configProblems as problems, MINIMAL_CONFIG as MINIMAL } from '../../helpers/config-problems.js';

const SECRET = 'whsec-0123456789abcdef0123';
const notificationsOf = (text: string, env: NodeJS.ProcessEnv = {}) => parseConfigText(text, 'test.yaml', env).notifications;

describe('notifications config', () => {
  it('is off (no webhook) by default, with the documented defaults', () => {
    expect(notificationsOf(MINIMAL)).toEqual({
      webhooks: [],
      budgetThresholds: [0.5, 0.8, 1],
      keyExpiryWarningMs: 7 * 86_400_000,
      keyExpirySweepMs: 10_000,
      retry: { initialMs: 1_000, maxMs: 3_600_000, giveUpAfterMs: 86_400_000 },
      maxQueue: 10_000,
      concurrency: 16,
      dir: 'var/webhooks',
    });
  });

  it('reads webhooks with the secret from the environment, and never shows the secret', () => {
    const text = `${MINIMAL}notifications:\n  webhooks:\n    - { url: "https://hooks.example.com/agentgw", secret: "\${WEBHOOK_SECRET}", events: ["key.created", "upstream.down"] }\n  budget_thresholds: [0.5, 0.9]\n  key_expiry_warning: 3d\n  retry: { initial: 2s, max: 10m, give_up_after: 12h }\n`;
    const config = parseConfigText(text, 'test.yaml', { WEBHOOK_SECRET: SECRET });
    const [webhook] = config.notifications.webhooks;
    expect(webhook!.url).toBe('https://hooks.example.com/agentgw');
    expect(webhook!.secrets.map((s) => s.reveal())).toEqual([SECRET]);
    expect(webhook!.events).toEqual(new Set(['key.created', 'upstream.down']));
    expect(config.notifications).toMatchObject({ budgetThresholds: [0.5, 0.9], keyExpiryWarningMs: 3 * 86_400_000, retry: { initialMs: 2_000, maxMs: 600_000, giveUpAfterMs: 43_200_000 } });
    // A dump of the config (JSON, util.inspect, a log line's String()) shows no secret.
    expect(JSON.stringify(config)).not.toContain(SECRET);
    expect(inspect(config, { depth: 10 })).not.toContain(SECRET);
    expect(String(webhook!.secrets[0])).toBe('[redacted]');
  });

  it('takes two secrets during a rotation, the first signing', () => {
    const text = `${MINIMAL}notifications:\n  webhooks:\n    - { url: "http://127.0.0.1:9000/", secret: ["${SECRET}-new", "${SECRET}-old"] }\n`;
    expect(notificationsOf(text).webhooks[0]!.secrets.map((s) => s.reveal())).toEqual([`${SECRET}-new`, `${SECRET}-old`]);
    expect(notificationsOf(text).webhooks[0]!.events).toBe('*');
  });

  it('refuses a URL that is not one, an empty or short secret, bad thresholds, unknown events and an unset variable', () => {
    const hook = (fields: string) => `${MINIMAL}notifications:\n  webhooks:\n    - { ${fields} }\n`;
    expect(problems(hook(`url: "not a url", secret: "${SECRET}"`))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.url: must be an http:\/\/ or https:\/\/ URL/)]);
    expect(problems(hook(`url: "ftp://x.example/", secret: "${SECRET}"`))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.url: /)]);
    expect(problems(hook('url: "https://x.example/", secret: ""'))[0]).toMatch(/^notifications\.webhooks\.0\.secret/);
    expect(problems(hook('url: "https://x.example/", secret: "short"'))[0]).toMatch(/^notifications\.webhooks\.0\.secret/);
    expect(problems(hook('url: "https://x.example/"'))[0]).toMatch(/^notifications\.webhooks\.0\.secret/);
    expect(problems(hook(`url: "https://x.example/", secret: "${SECRET}", events: ["key.deleted"]`))[0]).toMatch(/^notifications\.webhooks\.0\.events\.0: must be "\*" or one of budget\.threshold/);
    expect(problems(`${MINIMAL}notifications: { budget_thresholds: [0.5, 1.5] }\n`)).toEqual([expect.stringMatching(/^notifications\.budget_thresholds\.1: a fraction of at most 1/)]);
    expect(problems(`${MINIMAL}notifications: { budget_thresholds: [0] }\n`)).toEqual([expect.stringMatching(/^notifications\.budget_thresholds\.0: a fraction above 0/)]);
    expect(problems(`${MINIMAL}notifications: { budget_thresholds: [0.8, 0.5] }\n`)).toEqual([expect.stringMatching(/^notifications\.budget_thresholds: must be sorted ascending/)]);
    expect(problems(`${MINIMAL}notifications: { budget_thresholds: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] }\n`)[0]).toMatch(/^notifications\.budget_thresholds: at most 8/);
    expect(problems(`${MINIMAL}notifications: { key_expiry_warning: soon }\n`)[0]).toMatch(/^notifications\.key_expiry_warning: expected a duration/);
    expect(problems(`${MINIMAL}notifications: { retry: { initial: 2h, max: 1h } }\n`)[0]).toMatch(/retry\.initial must not exceed retry\.max/);
    expect(problems(`${MINIMAL}notifications: { webhook: [] }\n`)[0]).toMatch(/^notifications: unknown key "webhook"/);
    // The problem names the variable, never a value.
    expect(() => parseConfigText(hook('url: "https://x.example/", secret: "${UNSET_WEBHOOK_SECRET}"'), 'test.yaml', {})).toThrow(/UNSET_WEBHOOK_SECRET/);
  });

  it('signs with format standard unless told t-v1, and names each webhook in the outbox by its id (from the URL unless given)', () => {
    const text = `${MINIMAL}notifications:\n  webhooks:\n    - { url: "https://a.example/hook", secret: "${SECRET}" }\n    - { url: "https://b.example/hook", secret: "${SECRET}", format: t-v1, id: oncall }\n`;
    const [a, b] = notificationsOf(text).webhooks;
    expect(a).toMatchObject({ format: 'standard', id: defaultWebhookId('https://a.example/hook') });
    expect(a!.id).toMatch(/^h[0-9a-f]{12}$/);
    expect(b).toMatchObject({ format: 't-v1', id: 'oncall' });
    // The same URL gives the same id on every start: the webhook keeps its outbox position.
    expect(notificationsOf(text).webhooks[0]!.id).toBe(a!.id);
  });

  it('reads a whsec_ secret as its base64-decoded key under standard, and as written under t-v1', () => {
    const key = Buffer.from('0123456789abcdef0123456789abcdef');
    const whsec = `whsec_${key.toString('base64')}`;
    const [standard, tv1] = notificationsOf(`${MINIMAL}notifications:\n  webhooks:\n    - { url: "https://a.example/", secret: "${whsec}" }\n    - { url: "https://b.example/", secret: "${whsec}", format: t-v1 }\n`).webhooks;
    expect(standard!.secrets[0]!.signingKey('standard')).toEqual(key);
    expect(tv1!.secrets[0]!.signingKey('t-v1')).toEqual(Buffer.from(whsec));
    // A raw secret is its own bytes under either format.
    expect(notificationsOf(`${MINIMAL}notifications:\n  webhooks:\n    - { url: "https://a.example/", secret: "${SECRET}" }\n`).webhooks[0]!.secrets[0]!.signingKey('standard')).toEqual(Buffer.from(SECRET));
  });

  it('refuses an unknown format, a whsec_ secret that is not base64 or too short, a raw secret that is not ASCII under standard, and two webhooks with one id', () => {
    const hook = (fields: string) => `${MINIMAL}notifications:\n  webhooks:\n    - { url: "https://x.example/", ${fields} }\n`;
    expect(problems(hook(`secret: "${SECRET}", format: stripe`))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.format: must be one of standard, t-v1/)]);
    expect(problems(hook('secret: "whsec_not*base64*at*all!!"'))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.secret: a whsec_ secret is base64 after the prefix/)]);
    expect(problems(hook(`secret: "whsec_${Buffer.from('0123456789').toString('base64')}"`))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.secret: a whsec_ secret's key is at least 16 bytes/)]);
    expect(problems(hook('secret: ["whsec-0123456789abcdef0123", "has spaces in it 0123456789"]'))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.secret\.1: a secret without the whsec_ prefix is used as raw bytes and must be printable ASCII/)]);
    // Under t-v1 the same secret is bytes to HMAC with as it is: accepted.
    expect(notificationsOf(hook('secret: "has spaces in it 0123456789", format: t-v1')).webhooks[0]!.format).toBe('t-v1');
    expect(problems(hook(`secret: "${SECRET}", id: "On Call"`))).toEqual([expect.stringMatching(/^notifications\.webhooks\.0\.id: lowercase letters, digits/)]);
    const twice = `${MINIMAL}notifications:\n  webhooks:\n    - { url: "https://x.example/", secret: "${SECRET}", events: ["key.created"] }\n    - { url: "https://x.example/", secret: "${SECRET}", events: ["upstream.down"] }\n`;
    expect(problems(twice)).toEqual([expect.stringMatching(/^notifications\.webhooks\.1\.id: "h[0-9a-f]{12}" names two webhooks: give each its own id/)]);
    expect(notificationsOf(twice.replace('events: ["upstream.down"]', 'events: ["upstream.down"], id: oncall')).webhooks.map((w) => w.id)).toEqual([defaultWebhookId('https://x.example/'), 'oncall']);
  });
});
