// The dashboard's session cookie: HttpOnly (page scripts never see the id), SameSite=Strict
// (no other site's page can make the browser send it), Path=/ (the dashboard and the admin
// API share it), and when the admin listener's socket speaks TLS, Secure and the `__Host-`
// name prefix (a browser then refuses the cookie from plain HTTP or with a Domain, so a
// sibling host or a plain-HTTP page cannot plant or shadow it). docs/dashboard.md.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

export const SESSION_COOKIE = 'agentgw_session';
export const TLS_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

function cookieName(req: IncomingMessage): string {
  return servedOverTls(req) ? TLS_SESSION_COOKIE : SESSION_COOKIE;
}

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
  const id = readCookie(req.headers.cookie, cookieName(req));
  return id === undefined || id === '' ? undefined : id;
}

export function servedOverTls(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true;
}

function attributes(req: IncomingMessage): string {
  return `Path=/; HttpOnly; SameSite=Strict${servedOverTls(req) ? '; Secure' : ''}`;
}

export function sessionCookie(req: IncomingMessage, sessionId: string, maxAgeMs: number): string {
  return `${cookieName(req)}=${sessionId}; Max-Age=${Math.floor(maxAgeMs / 1000)}; ${attributes(req)}`;
}

export function clearedSessionCookie(req: IncomingMessage): string {
  return `${cookieName(req)}=; Max-Age=0; ${attributes(req)}`;
}
