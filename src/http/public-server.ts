// The public listener's server, by `listen.tls`: plain node:http without it (exactly as
// before TLS existed: no wrapper, no extra listener; its responses journaled as with TLS), node:https with it, or node:http2's
// secure server answering both `h2` and `http/1.1` by ALPN on one port with
// `listen.tls.http2` (docs/operations.md "TLS", decision 0021). Also the two ways a graceful
// stop closes connections, since an HTTP/2 server has no closeIdleConnections() for its
// sessions and no closeAllConnections() at all.
import type { IncomingMessage, Server as HttpServer, ServerOptions, ServerResponse } from 'node:http';
import { createServer as createHttpServer } from '../node-http.js';
import { createSecureServer, type Http2SecureServer, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import type { GatewayConfig } from '../config/schema.js';
import { guardResets, Http2RequestDeadlines, http2Settings } from './http2-guard.js';
import { JournaledHttp2Response, JournaledResponse } from './journaled-response.js';

// A response's last bytes wait for its audit record's journal write (journaled-response.ts).
const HTTP1_RESPONSE = { ServerResponse: JournaledResponse as unknown as typeof ServerResponse };

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface PublicServer {
  /** The server to listen on and attach node:http's events to (clientError, connect, checkExpectation). */
  readonly server: HttpServer | HttpsServer | Http2SecureServer;
  /** HTTP/1.1 connections with no request in flight are closed; HTTP/2 sessions get GOAWAY and end after their streams. */
  closeIdle(): void;
  /** Every connection is cut, in flight or not. */
  closeAll(): void;
}

type ListenConfig = GatewayConfig['listen'];

/** `tls`: the certificate as read by tls-certificates.ts, when listen.tls is set. */
export function createPublicServer(listen: ListenConfig, handler: RequestHandler, tls: SecureContextOptions | undefined): PublicServer {
  const options = serverOptions(listen);
  if (tls === undefined || listen.tls === undefined) return nodeHttpServer(createHttpServer({ ...options, ...HTTP1_RESPONSE }, handler));
  // A client CA turns on mutual TLS: the handshake fails for a client without a certificate
  // it signed, before any byte of HTTP.
  const mutual = listen.tls.caFile !== undefined ? { requestCert: true, rejectUnauthorized: true } : {};
  if (!listen.tls.http2) return nodeHttpServer(createHttpsServer({ ...options, ...tls, ...mutual, ...HTTP1_RESPONSE }, handler));
  const responses = { Http1ServerResponse: JournaledResponse as unknown as typeof ServerResponse, Http2ServerResponse: JournaledHttp2Response as unknown as typeof Http2ServerResponse };
  const tlsConfig = listen.tls;
  const deadlines = new Http2RequestDeadlines(() => listen.requestTimeoutMs);
  // HTTP/2 requests get the request_timeout node:http2 does not enforce (http2-guard.ts); an
  // HTTP/1.1 request on this server pays one integer comparison for it.
  const guarded: RequestHandler = (req, res) => {
    if (req.httpVersionMajor === 2) deadlines.track(req, res);
    handler(req, res);
  };
  const server = createSecureServer({ ...tls, ...mutual, ...responses, allowHTTP1: true, noDelay: true, settings: http2Settings(listen, tlsConfig) }, guarded as never);
  server.once('close', () => deadlines.close());
  return http2Server(listen, tlsConfig, server);
}

function serverOptions(listen: ListenConfig): ServerOptions {
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

function nodeHttpServer(server: HttpServer | HttpsServer): PublicServer {
  return { server, closeIdle: () => server.closeIdleConnections(), closeAll: () => server.closeAllConnections() };
}

function http2Server(listen: ListenConfig, tlsConfig: NonNullable<ListenConfig['tls']>, server: Http2SecureServer): PublicServer {
  // The HTTP/1.1 side of an http2 server takes node:http's limits from these properties, not
  // from its constructor options (Node 20–24); set before listen(), which starts the checks.
  const http1 = server as Http2SecureServer & { headersTimeout: number; requestTimeout: number; keepAliveTimeout: number; maxHeaderSize: number; connectionsCheckingInterval: number };
  const limits = serverOptions(listen);
  http1.headersTimeout = limits.headersTimeout!;
  http1.requestTimeout = limits.requestTimeout!;
  http1.keepAliveTimeout = limits.keepAliveTimeout!;
  http1.maxHeaderSize = limits.maxHeaderSize!;
  http1.connectionsCheckingInterval = limits.connectionsCheckingInterval!;
  const sessions = new Set<ServerHttp2Session>();
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    // keep_alive_timeout for HTTP/2: a session with no frames for that long is closed
    // gracefully (GOAWAY), which never cuts a stream still open on it.
    session.setTimeout(listen.keepAliveTimeoutMs, () => session.close());
    guardResets(session, tlsConfig);
  });
  return {
    server,
    closeIdle() {
      const withIdle = server as Http2SecureServer & { closeIdleConnections?: () => void };
      withIdle.closeIdleConnections?.();
      for (const session of sessions) if (!session.closed) session.close();
    },
    closeAll() {
      for (const socket of sockets) socket.destroy();
    },
  };
}
