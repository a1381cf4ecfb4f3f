import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { hexDigitsOf, traceContextFor } from '../../../src/proxy/traceparent.js';
import { newRequestId } from '../../../src/request/request-ids.js';

// The id generator keeps the latest millisecond it saw, for the whole process, and this file
// moves it centuries ahead: the test worker's later files (vitest.config.ts: a worker keeps its
// process) must not make ids there, so they get the modules afresh (decision 0115).
afterAll(() => vi.resetModules());

/** The rule as first written: drop every dash, lower-case, and take it if 32 hex digits are left. */
function referenceHexDigits(requestId: string): string | undefined {
  const hex = requestId.replace(/-/g, '').toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) ? hex : undefined;
}

describe('trace id from the request id', () => {
  it('follows the rule for any id: UUIDs in either case, dashes anywhere, other text', () => {
    const hexChar = fc.constantFrom(...'0123456789abcdefABCDEF-xZ'.split(''));
    const id = fc.oneof(
      fc.uuid(),
      fc.uuid().map((u) => u.toUpperCase()),
      fc.string({ unit: hexChar, minLength: 30, maxLength: 40 }),
      fc.string({ unit: hexChar, minLength: 36, maxLength: 36 }),
      fc.string(),
    );
    fc.assert(
      fc.property(id, (requestId) => {
        expect(hexDigitsOf(requestId)).toBe(referenceHexDigits(requestId));
      }),
      { numRuns: 5_000 },
    );
  });

  it('reads the digits of the id just made from its bytes, and follows the rule for any other id after it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.string(), (nowMs, other) => {
        const made = newRequestId(nowMs);
        expect(hexDigitsOf(made)).toBe(referenceHexDigits(made));
        // The same text as another string object: the same digits.
        expect(hexDigitsOf(made.split('').join(''))).toBe(referenceHexDigits(made));
        // Any other id, while the last one made is still the one above.
        expect(hexDigitsOf(other)).toBe(referenceHexDigits(other));
        expect(hexDigitsOf(made.toUpperCase())).toBe(referenceHexDigits(made));
      }),
      { numRuns: 2_000 },
    );
  });

  it('is the generated UUID without its dashes, and a fresh one when the id gives none', () => {
    const uuid = randomUUID();
    const fromUuid = traceContextFor(undefined, uuid);
    expect(fromUuid.traceId).toBe(uuid.replaceAll('-', ''));
    expect(fromUuid.traceparent).toMatch(new RegExp(`^00-${fromUuid.traceId}-[0-9a-f]{16}-01$`));

    const fromClientId = traceContextFor(undefined, 'client-chosen-id');
    expect(fromClientId.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceContextFor(undefined, '00000000-0000-0000-0000-000000000000').traceId).not.toBe('0'.repeat(32));
  });

  it('passes a valid incoming traceparent through, lower-cased', () => {
    const incoming = '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01';
    expect(traceContextFor(incoming, randomUUID())).toEqual({ traceparent: incoming.toLowerCase(), traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
  });
});
