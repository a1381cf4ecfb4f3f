// GET /.well-known/oauth-protected-resource/mcp/{server} on the public listener (RFC 9728;
// docs/identity.md "MCP clients"): the metadata an MCP client reads to find the identity
// provider. Only when auth.jwt names an issuer: the public listener then checks this one
// prefix before the chat pipeline; without issuers it is not installed at all.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isServerName, PROTECTED_RESOURCE_PATH, protectedResourceMetadata } from '../auth/jwt/protected-resource.js';
import type { JwtIssuerConfig } from '../config/auth-schema.js';
import { GatewayError } from '../errors.js';
import { sendError } from './errors.js';
import { chooseRequestId } from './request-id.js';

const MCP_METADATA_PREFIX = `${PROTECTED_RESOURCE_PATH}/mcp/`;

/** Whether the request is for the metadata (the pipeline answers everything else). */
export function isProtectedResourceRequest(url: string | undefined): boolean {
  return url !== undefined && url.startsWith(PROTECTED_RESOURCE_PATH);
}

export function answerProtectedResource(req: IncomingMessage, res: ServerResponse, issuers: readonly JwtIssuerConfig[]): void {
  const requestId = chooseRequestId(req.headers['x-request-id']);
  res.setHeader('X-Request-Id', requestId);
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  const server = path.startsWith(MCP_METADATA_PREFIX) ? path.slice(MCP_METADATA_PREFIX.length) : '';
  const document = isServerName(server) ? protectedResourceMetadata(issuers, server) : undefined;
  if (document === undefined) {
    sendError(res, new GatewayError('not_found', { message: 'No such resource; MCP servers have their metadata at /.well-known/oauth-protected-resource/mcp/{server}.' }), requestId);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, new GatewayError('method_not_allowed', { message: 'This route accepts GET, HEAD.', headers: { Allow: 'GET, HEAD' } }), requestId);
    return;
  }
  const body = JSON.stringify(document);
  // Public and the same for everyone: cacheable, and readable by a browser-based MCP client.
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' });
  res.end(req.method === 'HEAD' ? undefined : body);
  req.resume();
}
