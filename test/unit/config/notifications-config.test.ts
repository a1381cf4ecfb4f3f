// The notifications block (docs/notifications.md "Configuration"): defaults, the secret from
// ${ENV} and never printed, and what it refuses (a URL that is not one, an empty or short
// secret, thresholds outside (0, 1] or out of order, unknown event types).
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
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
});
