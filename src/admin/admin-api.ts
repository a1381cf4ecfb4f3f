// The admin API's router (docs/admin-api.md): /admin/v1/* behind admin tokens (or a
// dashboard session, dashboard-routes.ts), the OpenAPI documents (open), and /dashboard
// (docs/dashboard.md). With no admin token configured, /admin/v1 and /dashboard answer 404
// as if they did not exist. Errors use the gateway's envelope.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../errors.js';
import { sendError } from '../http/errors.js';
import { ClientGoneError } from '../http/read-body.js';
import { chooseRequestId } from '../http/request-id.js';
import { KeyConflictError, StoreUnavailableError } from '../keys/key-store.js';
import { KeyServiceError } from '../keys/key-service.js';
import { requireRole } from './admin-auth.js';
import { listAgents, listPlans } from './admin-catalog.js';
import { listMcpServers } from './admin-mcp.js';
import type { AdminApiDeps, AdminExchange } from './admin-context.js';
import { createKey, listKeys, revokeKey, rotateKey, showKey, updateKey } from './admin-keys.js';
import { AdminTokenAttempts } from './admin-token-attempts.js';
import { createDashboard, isDashboardPath, SESSION_PATH as DASHBOARD_SESSION_PATH, type Dashboard } from './dashboard-routes.js';
import { getUsage } from './admin-usage.js';
import { listEvents, redeliverEvent } from './admin-events.js';
import { revokeTokens } from './admin-token-revocations.js';
import { isOpenApiDocumentName, openApiJson } from './openapi-documents.js';

type Handler = (x: AdminExchange, keyId: string) => Promise<void> | void;

interface Route {
  /** Path below /admin/v1, with `{key_id}` standing for one segment. */
  pattern: string;
  methods: Record<string, Handler>;
}

const ROUTES: Route[] = [
  { pattern: '/keys', methods: { GET: listKeys, POST: createKey } },
  { pattern: '/keys/{key_id}', methods: { GET: showKey, PATCH: updateKey } },
  { pattern: '/keys/{key_id}/revoke', methods: { POST: revokeKey } },
  { pattern: '/keys/{key_id}/rotate', methods: { POST: rotateKey } },
  { pattern: '/usage', methods: { GET: getUsage } },
  { pattern: '/plans', methods: { GET: listPlans } },
  { pattern: '/agents', methods: { GET: listAgents } },
  { pattern: '/mcp/servers', methods: { GET: listMcpServers } },
  { pattern: '/events', methods: { GET: listEvents } },
  { pattern: '/events/{key_id}/redeliver', methods: { POST: redeliverEvent } },
  { pattern: '/tokens/revocations', methods: { POST: revokeTokens } },
];

function match(path: string): { route: Route; keyId: string } | undefined {
  const parts = path.split('/');
  for (const route of ROUTES) {
    const pattern = route.pattern.split('/');
    if (pattern.length !== parts.length) continue;
    let keyId = '';
    if (pattern.every((p, i) => (p === '{key_id}' ? ((keyId = decodeSegment(parts[i]!)), keyId !== '') : p === parts[i]))) return { route, keyId };
  }
  return undefined;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const ADMIN_PREFIX = '/admin/v1';

/** Whether the admin API (or the documents) answer this path. */
export function isAdminApiPath(path: string): boolean {
  return path === ADMIN_PREFIX || path.startsWith(`${ADMIN_PREFIX}/`) || path === '/dashboard' || path.startsWith('/dashboard/') || path.startsWith('/openapi/');
}

export function createAdminApi(deps: AdminApiDeps): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
  const dashboard = createDashboard(deps);
  const attempts = new AdminTokenAttempts(deps.config(), deps.clock, deps.logger);
  return async (req, res, url) => {
    const requestId = chooseRequestId(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    try {
      // An address past its failed attempts is refused before any token is compared.
      if (presentsToken(req, url)) attempts.check(req);
      await route(req, res, url, requestId, deps, dashboard);
    } catch (error) {
      sendError(res, toGatewayError(await attempts.refused(req, error, url.pathname), deps, requestId), requestId);
    }
  };
}

async function route(req: IncomingMessage, res: ServerResponse, url: URL, requestId: string, deps: AdminApiDeps, dashboard: Dashboard): Promise<void> {
  const path = url.pathname;
  if (isDashboardPath(path)) return dashboard.handle(req, res, url);
  if (path.startsWith('/openapi/')) {
    const name = path.slice('/openapi/'.length);
    if (!isOpenApiDocumentName(name)) throw new GatewayError('not_found', { message: 'No such document; see /openapi/agent-chat.json and /openapi/admin.json.' });
    if (req.method !== 'GET' && req.method !== 'HEAD') throw methodNotAllowed('GET, HEAD');
    const body = await openApiJson(name);
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-cache' });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  const { tokens, oidc } = deps.config().admin;
  if (tokens.length === 0 && oidc === undefined) throw new GatewayError('not_found', { message: 'The admin API is off: no admin token is configured (admin.tokens).' });
  const actor = dashboard.authenticate(req);
  if (!path.startsWith(`${ADMIN_PREFIX}/`)) throw new GatewayError('not_found', { message: 'No such admin route; see /openapi/admin.json.' });
  const found = match(path.slice(ADMIN_PREFIX.length));
  if (!found) throw new GatewayError('not_found', { message: 'No such admin route; see /openapi/admin.json.' });
  const method = req.method ?? 'GET';
  const handler = found.route.methods[method === 'HEAD' ? 'GET' : method];
  if (!handler) throw methodNotAllowed(Object.keys(found.route.methods).join(', '));
  requireRole(actor, method === 'GET' || method === 'HEAD' ? 'viewer' : 'admin');
  await handler({ req, res, url, requestId, actor, deps }, found.keyId);
}

/** A bearer token, or a dashboard sign-in (which posts one). */
function presentsToken(req: IncomingMessage, url: URL): boolean {
  return req.headers.authorization !== undefined || (req.method === 'POST' && url.pathname === DASHBOARD_SESSION_PATH);
}

function methodNotAllowed(allow: string): GatewayError {
  return new GatewayError('method_not_allowed', { message: `This route accepts ${allow}.`, headers: { Allow: allow } });
}

function toGatewayError(error: unknown, deps: AdminApiDeps, requestId: string): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof KeyServiceError) {
    if (error.code === 'not_found') return new GatewayError('key_not_found', { message: error.message });
    return new GatewayError('invalid_request', { message: error.message, param: error.param });
  }
  if (error instanceof StoreUnavailableError) return new GatewayError('store_unavailable', { retryAfterSeconds: 1 });
  // The client left before its body arrived: nobody reads the answer, nothing to log.
  if (error instanceof ClientGoneError) return new GatewayError('invalid_request', { message: error.message });
  deps.logger.error({ err: error instanceof Error ? { message: error.message, name: error.name } : error, request_id: requestId, conflict: error instanceof KeyConflictError }, 'admin API request failed');
  return new GatewayError('internal_error');
}
