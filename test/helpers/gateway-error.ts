// The GatewayError a call rejects with, for tests that look at its type, status and fields.
import { expect } from 'vitest';
import { GatewayError } from '../../src/errors.js';

/** Fails the test when `promise` resolves, or rejects with anything but a GatewayError. */
export async function gatewayErrorOf(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a rejection with a GatewayError');
}
