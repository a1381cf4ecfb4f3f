// agentgw_mcp_sessions (src/mcp/session-gauge.ts): opened here, not ended here, used here within
// the idle time; never below zero for sessions ended elsewhere.
import { describe, expect, it } from 'vitest';
import { metrics } from '../../../src/metrics/metrics.js';
import { SessionGauge } from '../../../src/mcp/session-gauge.js';

async function gauge(server: string): Promise<number> {
  const values = (await metrics.mcpSessions.get()).values;
  return values.find((v) => v.labels.server === server)?.value ?? 0;
}

describe('SessionGauge', () => {
  it('counts sessions opened here until they end or go idle here; an unknown end changes nothing', async () => {
    let now = 0;
    const sessions = new SessionGauge(() => 100, () => now);
    sessions.open('a', 'gauge-test');
    sessions.open('b', 'gauge-test');
    expect(await gauge('gauge-test')).toBe(2);
    sessions.ended('a');
    sessions.ended('a');
    sessions.ended('from-another-instance');
    expect(await gauge('gauge-test')).toBe(1);
    now = 90;
    sessions.used('b');
    now = 150;
    sessions.open('c', 'gauge-test');
    expect(await gauge('gauge-test')).toBe(2);
    now = 260;
    sessions.open('d', 'gauge-test');
    // b (used at 90) and c (opened at 150) have been idle past 100 here.
    expect(await gauge('gauge-test')).toBe(1);
  });
});
