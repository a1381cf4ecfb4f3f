// The gateway's HTTP server: node:http's options, and answers to what never becomes a request
// of the pipeline (unparsable HTTP, oversized headers, timeouts, CONNECT, an unmet Expect).
// Every request goes to the chat pipeline (chat-pipeline.ts).
import { createServer, type IncomingMessage, type Server, type ServerOptions, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { ActiveStreams } from '../proxy/active-streams.js';
import { ChatPipeline, type GatewayDependencies } from './chat-pipeline.js';
import { hasResponseInFlight, sendError, writeRawError } from './errors.js';
import { JournaledResponse } from './journaled-response.js';
import { chooseRequestId } from './request-id.js';

export type { GatewayDependencies };

export interface GatewayServer {
  server: Server;
  activeStreams: ActiveStreams;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

export function createGatewayServer(deps: GatewayDependencies): GatewayServer {
  const pipeline = new ChatPipeline(deps);
  // JournaledResponse: a response's last bytes wait for its audit record's journal write.
  const server = createServer({ ...serverOptions(deps.runtime.current.config.listen), ServerResponse: JournaledResponse as unknown as typeof ServerResponse }, pipeline.handle);
  server.on('clientError', answerClientError);
  // Without these listeners Node would close a CONNECT without an answer and send a bare 417.
  server.on('connect', refuseConnect);
  server.on('checkExpectation', refuseExpectation);
  return { server, activeStreams: pipeline.activeStreams, handle: pipeline.handle };
}

function serverOptions(listen: GatewayConfig['listen']): ServerOptions {
  return {
    headersTimeout: listen.headersTimeoutMs,
    requestTimeout: listen.requestTimeoutMs,
    keepAliveTimeout: listen.keepAliveTimeoutMs,
    maxHeaderSize: listen.maxHeaderBytes,
    // How often the two timeouts above are enforced; Node's default (30 s) would let a
    // slowloris client keep a connection 30 s past headers_timeout.
    connectionsCheckingInterval: 1_000,
    noDelay: true,
  };
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
