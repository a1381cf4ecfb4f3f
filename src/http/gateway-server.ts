// The gateway's HTTP server: node:http's options, and answers to what never becomes a request
// of the pipeline (unparsable HTTP, oversized headers, timeouts, CONNECT, an unmet Expect).
// Every request goes to the chat pipeline (chat-pipeline.ts), but for the paths of the MCP
// front door (its endpoints and, with token issuers, their protected resource metadata).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { SecureContextOptions } from 'node:tls';
import { GatewayError } from '../errors.js';
import type { ActiveStreams } from '../proxy/active-streams.js';
import { ChatPipeline, type GatewayDependencies } from './chat-pipeline.js';
import { hasResponseInFlight, sendError, writeRawError } from './errors.js';
import { createPublicServer, type PublicServer } from './public-server.js';
import { chooseRequestId } from './request-id.js';

export type { GatewayDependencies };

/**
 * A handler for paths outside the chat routes (the MCP front door, src/mcp/): it says which
 * paths are its own. Absent, every request goes to the chat pipeline without a check.
 */
export interface PathHandler {
  owns(url: string | undefined): boolean;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

export interface GatewayServer extends PublicServer {
  activeStreams: ActiveStreams;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

/** `tls`: the listener's certificate when listen.tls is set (tls-certificates.ts reads it). */
export function createGatewayServer(deps: GatewayDependencies, tls?: SecureContextOptions, paths?: PathHandler): GatewayServer {
  const pipeline = new ChatPipeline(deps);
  // The MCP front door's paths (when mounted) beside the pipeline; without it, the pipeline alone.
  const handler: (req: IncomingMessage, res: ServerResponse) => void =
    paths === undefined ? pipeline.handle : (req, res) => (paths.owns(req.url) ? paths.handle(req, res) : pipeline.handle(req, res));
  const listener = createPublicServer(deps.runtime.current.config.listen, handler, tls);
  const server = listener.server;
  server.on('clientError', answerClientError);
  // Without these listeners Node would close a CONNECT without an answer and send a bare 417.
  server.on('connect', refuseConnect);
  server.on('checkExpectation', refuseExpectation);
  return { ...listener, activeStreams: pipeline.activeStreams, handle: handler };
}

function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A response in flight on this connection: writing a 400 would land inside its bytes.
  if (!socket.writable || error.code === 'ECONNRESET' || hasResponseInFlight(socket)) {
    socket.destroy();
    return;
  }
  if (error.code === 'HPE_HEADER_OVERFLOW') writeRawError(socket, new GatewayError('request_header_fields_too_large'));
  else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') writeRawError(socket, new GatewayError('request_timeout'));
  else writeRawError(socket, new GatewayError('invalid_request', { message: 'The request is not valid HTTP.' }));
}

function refuseConnect(_req: IncomingMessage, socket: Duplex): void {
  writeRawError(socket, new GatewayError('method_not_allowed', { message: 'CONNECT is not supported.' }));
}

function refuseExpectation(req: IncomingMessage, res: ServerResponse): void {
  res.shouldKeepAlive = false;
  sendError(res, new GatewayError('expectation_failed'), chooseRequestId(req.headers['x-request-id']));
}
