// Admin token checks: digests compared in constant time, the matching token's name and role.
import { describe, expect, it } from 'vitest';
import { authenticateAdmin, requireRole } from '../../../src/admin/admin-auth.js';
import { adminTokenDigest } from '../../../src/config/schema.js';
import { GatewayError } from '../../../src/errors.js';

const tokens = [
  { name: 'ops', role: 'admin' as const, sha256: adminTokenDigest('ops-token-0123456789') },
  { name: 'dash', role: 'viewer' as const, sha256: adminTokenDigest('dash-token-0123456789') },
];

function failure(authorization: string | undefined): string {
  try {
    authenticateAdmin(authorization, tokens);
  } catch (error) {
    if (error instanceof GatewayError) return `${error.status} ${error.type}`;
    throw error;
  }
  return 'accepted';
}

describe('admin auth', () => {
  it('accepts each configured token as its name and role', () => {
    expect(authenticateAdmin('Bearer ops-token-0123456789', tokens)).toEqual({ name: 'ops', role: 'admin' });
    expect(authenticateAdmin('bearer   dash-token-0123456789 ', tokens)).toEqual({ name: 'dash', role: 'viewer' });
  });

  it('refuses a missing header, another scheme, a wrong, truncated or extended token', () => {
    expect(failure(undefined)).toBe('401 missing_admin_token');
    expect(failure('Basic b3BzOnB3')).toBe('401 missing_admin_token');
    expect(failure('Bearer')).toBe('401 missing_admin_token');
    expect(failure('Bearer ops-token-012345678')).toBe('401 invalid_admin_token');
    expect(failure('Bearer ops-token-01234567890')).toBe('401 invalid_admin_token');
    expect(failure('Bearer OPS-TOKEN-0123456789')).toBe('401 invalid_admin_token');
  });

  it('lets viewers read and only admins write', () => {
    expect(() => requireRole({ name: 'dash', role: 'viewer' }, 'viewer')).not.toThrow();
    expect(() => requireRole({ name: 'ops', role: 'admin' }, 'admin')).not.toThrow();
    expect(() => requireRole({ name: 'dash', role: 'viewer' }, 'admin')).toThrow(expect.objectContaining({ type: 'insufficient_role', status: 403 }));
  });
});
