// The alternative we measured against: node:http in front, http-proxy 1.18.1 behind with a
// keep-alive agent, otherwise its defaults (what a team reaching for http-proxy gets).
//
//   node bench/reference/bare-http-proxy.mjs --upstream http://127.0.0.1:8081 [--port 0] [--patch-streaming]
//   env: UPSTREAM, PORT, HOST, PATCH_STREAMING=1
//
// --patch-streaming adds the two hooks a gateway on http-proxy would need for SSE (flush an
// event stream's headers at once; abort the upstream request when the client leaves). It
// exists so the ADR can say what the stock behaviour costs to fix, not for the load runs.
import http from 'node:http';
import httpProxy from 'http-proxy';
import { closeServer, hasFlag, isMainModule, listen, readOption } from './cli-args.mjs';

const BAD_GATEWAY_BODY = Buffer.from('{"error":{"type":"agent_unavailable","message":"upstream failed"}}');

/**
 * @param {object} options
 * @param {string} options.upstream origin of the runner, e.g. http://127.0.0.1:8081
 * @param {number} [options.port] 0 = any free port
 * @param {string} [options.host]
 * @param {number} [options.maxSockets] upper bound on pooled upstream sockets
 * @param {boolean} [options.patchStreaming] add the SSE header-flush and abort hooks
 */
export async function startBareHttpProxy(options) {
  const host = options.host ?? '127.0.0.1';
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 128, keepAliveMsecs: 30_000 });
  const proxy = httpProxy.createProxyServer({ target: options.upstream, agent });

  proxy.on('error', (_err, _req, res) => {
    // http-proxy hands the ServerResponse here for web requests; a socket for ws upgrades.
    if (!(res instanceof http.ServerResponse)) return;
    if (!res.headersSent && !res.destroyed) {
      res.writeHead(502, { 'content-type': 'application/json', 'content-length': String(BAD_GATEWAY_BODY.length) });
      res.end(BAD_GATEWAY_BODY);
    } else {
      res.destroy();
    }
  });

  if (options.patchStreaming) {
    proxy.on('proxyReq', (proxyReq, _req, res) => {
      // Stock 1.18.1 only listens for req 'aborted', which node does not emit once the
      // request body has been read, so a client leaving mid-response goes unnoticed.
      res.once('close', () => {
        if (!res.writableFinished) proxyReq.destroy();
      });
    });
    proxy.on('proxyRes', (proxyRes, _req, res) => {
      const type = proxyRes.headers['content-type'];
      if (typeof type === 'string' && type.startsWith('text/event-stream')) {
        // 'proxyRes' fires before http-proxy copies status and headers onto res (same tick),
        // so the flush has to wait for that copy.
        process.nextTick(() => {
          if (!res.headersSent && !res.destroyed) res.flushHeaders();
        });
      }
    });
  }

  const server = http.createServer((req, res) => proxy.web(req, res));
  const port = await listen(server, options.port ?? 0, host);
  return {
    server,
    port,
    url: `http://${host}:${port}`,
    close: async () => {
      await closeServer(server);
      proxy.close();
      agent.destroy();
    },
  };
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const upstream = readOption(argv, 'upstream', 'UPSTREAM');
  if (!upstream) {
    process.stderr.write('bare-http-proxy: --upstream URL (or UPSTREAM) is required\n');
    process.exit(2);
  }
  const proxy = await startBareHttpProxy({
    upstream,
    port: Number(readOption(argv, 'port', 'PORT', '0')),
    host: readOption(argv, 'host', 'HOST', '127.0.0.1'),
    patchStreaming: hasFlag(argv, 'patch-streaming') || process.env.PATCH_STREAMING === '1',
  });
  process.stdout.write(`listening ${proxy.port}\n`);
  const stop = () => proxy.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
