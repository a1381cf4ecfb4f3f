// The A2A agents' cards (src/proxy/a2a/a2a-cards.ts): read at start and on every reload, an
// agent without a readable card unavailable with one warning, and a stale fetch (one a reload
// overtook) never overwriting the newer answer.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../../src/config/load-config.js';
import { A2aCards } from '../../../../src/proxy/a2a/a2a-cards.js';
import type { A2aCard } from '../../../../src/proxy/a2a/a2a-card.js';
import { captureLogLines } from '../../../helpers/log-capture.js';

const card = (name: string): A2aCard => ({ name, description: '', version: '1.0', streaming: true, skills: [] });

function agents(upstream: string, protocol = 'a2a') {
  return parseConfigText(`agents:\n  travel:\n    protocol: ${protocol}\n    upstream: ${upstream}\n  plain:\n    upstream: http://127.0.0.1:1/api/v1\n`, 't.yaml', {}).agents;
}

describe('A2aCards', () => {
  it('reads the cards of A2A agents only, and again on a reload', async () => {
    const asked: string[] = [];
    const cards = new A2aCards(undefined, async (endpoint) => {
      asked.push(endpoint);
      return card(endpoint);
    });
    await cards.refresh(agents('http://127.0.0.1:1/a'));
    expect(cards.get('travel')?.name).toBe('http://127.0.0.1:1/a');
    expect(cards.get('plain')).toBeUndefined();
    await cards.refresh(agents('http://127.0.0.1:1/b'));
    expect(asked).toEqual(['http://127.0.0.1:1/a', 'http://127.0.0.1:1/b']);
    expect(cards.get('travel')?.name).toBe('http://127.0.0.1:1/b');
    await cards.refresh(agents('http://127.0.0.1:1/api/v1', 'agent-chat'));
    expect(cards.snapshot()).toEqual({});
    cards.stop();
  });

  it('leaves an agent whose card fails without one, with a warning naming why', async () => {
    const { logger, lines } = captureLogLines<{ level: string; msg: string; agent?: string; reason?: string }>();
    const cards = new A2aCards(logger, async () => {
      throw new Error('the agent card answered HTTP 404');
    });
    await cards.refresh(agents('http://127.0.0.1:1/a'));
    expect(cards.get('travel')).toBeUndefined();
    expect(lines.find((line) => line.msg.includes('A2A agent card could not be read'))).toMatchObject({ agent: 'travel', reason: 'the agent card answered HTTP 404' });
    cards.stop();
  });

  it('keeps the answer of the latest refresh when an older fetch lands after it', async () => {
    let releaseOld!: () => void;
    const cards = new A2aCards(undefined, (endpoint) =>
      endpoint.endsWith('/old') ? new Promise((resolve) => (releaseOld = () => resolve(card('old')))) : Promise.resolve(card('new')),
    );
    const first = cards.refresh(agents('http://127.0.0.1:1/old'));
    await cards.refresh(agents('http://127.0.0.1:1/new'));
    releaseOld();
    await first;
    expect(cards.get('travel')?.name).toBe('new');
    cards.stop();
  });
});
