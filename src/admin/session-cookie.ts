// The dashboard's session cookie: HttpOnly (page scripts never see the id), SameSite=Strict
// (no other site's page can make the browser send it), Path=/ (the dashboard and the admin
// API share it), and Secure when the admin listener itself speaks TLS. docs/dashboard.md.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

export const SESSION_COOKIE = 'agentgw_session';

/** The value of cookie `name` in a Cookie header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionIdOf(req: IncomingMessage): string | undefined {
  const id = readCookie(req.headers.cookie, SESSION_COOKIE);
  return id === undefined || id === '' ? undefined : id;
}

export function servedOverTls(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true;
}

function attributes(req: IncomingMessage): string {
  return `Path=/; HttpOnly; SameSite=Strict${servedOverTls(req) ? '; Secure' : ''}`;
}

export function sessionCookie(req: IncomingMessage, sessionId: string, maxAgeMs: number): string {
  return `${SESSION_COOKIE}=${sessionId}; Max-Age=${Math.floor(maxAgeMs / 1000)}; ${attributes(req)}`;
}

export function clearedSessionCookie(req: IncomingMessage): string {
  return `${SESSION_COOKIE}=; Max-Age=0; ${attributes(req)}`;
}
