// Dashboard sessions: ids are random and unguessable, sessions end when idle, when too old,
// at sign-out, and as soon as their admin token leaves the config or changes role.
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/clock.js';
import { adminTokenDigest, type AdminTokenConfig } from '../../../src/config/schema.js';
import { DashboardSessions } from '../../../src/admin/dashboard-sessions.js';

const MINUTE_MS = 60_000;
const limits = { idleTimeoutMs: 30 * MINUTE_MS, maxAgeMs: 12 * 60 * MINUTE_MS };

function manualClock(startMs = Date.parse('2026-01-31T12:00:00Z')): Clock & { advance(ms: number): void } {
  let nowMs = startMs;
  return { now: () => nowMs, advance: (ms) => void (nowMs += ms) };
}

const token = (name: string, secret: string, role: 'admin' | 'viewer' = 'admin'): AdminTokenConfig => ({ name, role, sha256: adminTokenDigest(secret) });
const ops = token('ops', 'ops-secret-0123456789');
const viewer = token('dash', 'dash-secret-0123456789', 'viewer');

describe('DashboardSessions', () => {
  it('opens a session with a 256-bit id and CSRF token, and resolves it to the token’s name and role', () => {
    const sessions = new DashboardSessions(manualClock());
    const created = sessions.create(ops.sha256, limits);
    expect(Buffer.from(created.sessionId, 'base64url')).toHaveLength(32);
    expect(Buffer.from(created.csrfToken, 'base64url')).toHaveLength(32);
    expect(created.csrfToken).not.toBe(created.sessionId);
    const other = sessions.create(viewer.sha256, limits);
    expect(other.sessionId).not.toBe(created.sessionId);
    expect(sessions.use(created.sessionId, [ops, viewer], limits)).toMatchObject({ actor: { name: 'ops', role: 'admin' }, csrfToken: created.csrfToken });
    expect(sessions.use(other.sessionId, [ops, viewer], limits)?.actor).toEqual({ name: 'dash', role: 'viewer' });
    expect(sessions.use('not-a-session', [ops, viewer], limits)).toBeUndefined();
  });

  it('ends a session left idle for the timeout, but not one in use', () => {
    const clock = manualClock();
    const sessions = new DashboardSessions(clock);
    const busy = sessions.create(ops.sha256, limits).sessionId;
    const idle = sessions.create(ops.sha256, limits).sessionId;
    for (let i = 0; i < 3; i++) {
      clock.advance(20 * MINUTE_MS);
      expect(sessions.use(busy, [ops], limits)).toBeDefined();
    }
    expect(sessions.use(idle, [ops], limits)).toBeUndefined();
    // Forgotten: it does not come back.
    expect(sessions.size).toBe(1);
  });

  it('ends any session at its absolute lifetime, however busy', () => {
    const clock = manualClock();
    const sessions = new DashboardSessions(clock);
    const id = sessions.create(ops.sha256, limits).sessionId;
    for (let elapsed = 0; elapsed < limits.maxAgeMs - 10 * MINUTE_MS; elapsed += 10 * MINUTE_MS) {
      clock.advance(10 * MINUTE_MS);
      expect(sessions.use(id, [ops], limits)).toBeDefined();
    }
    clock.advance(10 * MINUTE_MS);
    expect(sessions.use(id, [ops], limits)).toBeUndefined();
  });

  it('follows the config: a removed token ends its sessions, a changed role applies at once', () => {
    const sessions = new DashboardSessions(manualClock());
    const id = sessions.create(ops.sha256, limits).sessionId;
    expect(sessions.use(id, [{ ...ops, role: 'viewer' }], limits)?.actor.role).toBe('viewer');
    expect(sessions.use(id, [viewer], limits)).toBeUndefined();
    expect(sessions.use(id, [ops], limits)).toBeUndefined();
  });

  it('forgets a session at sign-out', () => {
    const sessions = new DashboardSessions(manualClock());
    const id = sessions.create(ops.sha256, limits).sessionId;
    expect(sessions.delete(id)).toBe(true);
    expect(sessions.use(id, [ops], limits)).toBeUndefined();
    expect(sessions.delete(id)).toBe(false);
  });

  it('a token signing in past its cap pushes out only its own sessions: a viewer cannot sign an admin out (issue 33, finding 6)', () => {
    const sessions = new DashboardSessions(manualClock(), 3);
    const admin = sessions.create(ops.sha256, limits).sessionId;
    for (let i = 0; i < 1_200; i += 1) sessions.create(viewer.sha256, limits);
    expect(sessions.use(admin, [ops, viewer], limits)?.actor.role).toBe('admin');
    expect(sessions.size).toBe(4);
  });

  it('holds at most its cap per token, pushing out the least recently used session', () => {
    const sessions = new DashboardSessions(manualClock(), 3);
    const [a, b, c] = [0, 1, 2].map(() => sessions.create(ops.sha256, limits).sessionId) as [string, string, string];
    expect(sessions.use(a, [ops], limits)).toBeDefined();
    const d = sessions.create(ops.sha256, limits).sessionId;
    expect(sessions.size).toBe(3);
    expect(sessions.use(b, [ops], limits)).toBeUndefined();
    for (const id of [a, c, d]) expect(sessions.use(id, [ops], limits)).toBeDefined();
  });
});
