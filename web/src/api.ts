// Every call the dashboard makes: same origin only, the session cookie sent by the browser,
// and the session's CSRF token on every write (docs/dashboard.md "Sessions and CSRF").
import type { Session } from './types.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | undefined,
  ) {
    super(message);
  }
}

let csrfToken = '';
let onSignedOut: () => void = () => {};

/** Called when any answer says the session has ended (401), so the app shows the sign-in form. */
export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network_error', 'The gateway could not be reached. Is it running?', undefined);
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new ApiError(response.status, 'bad_answer', `The gateway answered ${response.status} with something that is not JSON.`, undefined);
  }
  if (!response.ok) {
    const error = (parsed as { error?: { type?: string; message?: string; param?: string } } | undefined)?.error;
    const failure = new ApiError(response.status, error?.type ?? 'error', error?.message ?? `Request failed (${response.status}).`, error?.param);
    if (response.status === 401 && path !== '/dashboard/session') onSignedOut();
    throw failure;
  }
  return parsed as T;
}

export const api = {
  get: <T>(path: string) => request<T>('GET', path),
  post: <T>(path: string, body: unknown = {}) => request<T>('POST', path, body),
  patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, body),
};

/** The signed-in session, or undefined when there is none. */
export async function currentSession(): Promise<Session | undefined> {
  try {
    const session = await request<Session>('GET', '/dashboard/session');
    csrfToken = session.csrf_token;
    return session;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return undefined;
    throw error;
  }
}

export async function signIn(token: string): Promise<Session> {
  const session = await request<Session>('POST', '/dashboard/session', { token });
  csrfToken = session.csrf_token;
  return session;
}

/** Where to start a sign-in through the identity provider (admin.oidc), or undefined when it is off. */
export async function identityProviderSignIn(): Promise<string | undefined> {
  try {
    return (await request<{ issuer: string; login: string }>('GET', '/dashboard/oidc')).login;
  } catch {
    return undefined;
  }
}

export async function signOut(): Promise<void> {
  await request<void>('DELETE', '/dashboard/session');
  csrfToken = '';
}

/** A query string of the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
