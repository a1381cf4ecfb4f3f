import { describe, expect, it } from 'vitest';
import { pickTarget, type PickableTarget } from '../../../src/proxy/target-picker.js';
import { lcg } from '../../helpers/lcg.js';

interface T extends PickableTarget {
  name: string;
  weight: number;
  outstanding: number;
  available: boolean;
}

function target(name: string, weight = 1, outstanding = 0, available = true): T {
  return { name, weight, outstanding, available };
}

function shares(targets: T[], picks: number, random: () => number): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(targets.map((t) => [t.name, 0]));
  for (let i = 0; i < picks; i++) counts[pickTarget(targets, random, null)!.name]!++;
  return Object.fromEntries(Object.entries(counts).map(([name, n]) => [name, n / picks]));
}

describe('pickTarget (weighted power of two choices)', () => {
  it('with idle targets, shares traffic by weight (1:1:2 within ±2 points over 20,000 seeded picks)', () => {
    const targets = [target('a', 1), target('b', 1), target('c', 2)];
    const share = shares(targets, 20_000, lcg(7));
    expect(share.a).toBeGreaterThan(0.23);
    expect(share.a).toBeLessThan(0.27);
    expect(share.b).toBeGreaterThan(0.23);
    expect(share.b).toBeLessThan(0.27);
    expect(share.c).toBeGreaterThan(0.48);
    expect(share.c).toBeLessThan(0.52);
  });

  it('of the two drawn, takes the one with fewer outstanding requests per weight', () => {
    const busy = target('busy', 1, 5);
    const idle = target('idle', 1, 0);
    // With two targets both are always drawn, whichever comes first.
    for (const random of [() => 0, () => 0.99, lcg(3)]) expect(pickTarget([busy, idle], random, null)!.name).toBe('idle');
    // Per weight: 4 outstanding on weight 4 is lighter than 2 on weight 1.
    expect(pickTarget([target('heavy', 4, 4), target('light', 1, 2)], () => 0.99, null)!.name).toBe('heavy');
  });

  it('skips unavailable targets while any is available', () => {
    const targets = [target('a', 1, 0, false), target('b', 1, 3), target('c', 1, 0, false)];
    const random = lcg(11);
    for (let i = 0; i < 100; i++) expect(pickTarget(targets, random, null)!.name).toBe('b');
  });

  it('panics to all targets when none is available', () => {
    const targets = [target('a', 1, 0, false), target('b', 1, 0, false)];
    const seen = new Set<string>();
    const random = lcg(5);
    for (let i = 0; i < 100; i++) seen.add(pickTarget(targets, random, null)!.name);
    expect([...seen].sort()).toEqual(['a', 'b']);
  });

  it('never picks a target already tried, and gives up when all were', () => {
    const a = target('a');
    const b = target('b');
    const c = target('c');
    const random = lcg(9);
    for (let i = 0; i < 100; i++) expect(pickTarget([a, b, c], random, [a, c])).toBe(b);
    expect(pickTarget([a, b, c], random, [a, b, c])).toBeUndefined();
    // A tried target stays excluded even when the untried ones are all unavailable (panic among the untried).
    const down = target('down', 1, 0, false);
    expect(pickTarget([a, down], random, [a])).toBe(down);
  });

  it('copes with a random() at the very end of its range', () => {
    const targets = [target('a', 1), target('b', 2)];
    expect(pickTarget(targets, () => 0.9999999999999999, null)).toBeDefined();
  });
});
