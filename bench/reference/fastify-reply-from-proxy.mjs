// Optional third reference: fastify + @fastify/reply-from. Neither is a dependency of this
// repo; they are loaded from a throwaway directory outside it (FASTIFY_REF_DIR, default
// /tmp/fastify-ref) so the comparison costs the repo nothing. findFastifyReplyFrom()
// returns null when they are not installed there, and callers skip this proxy.
//
//   mkdir /tmp/fastify-ref && cd /tmp/fastify-ref && npm init -y && npm i fastify @fastify/reply-from
//   node bench/reference/fastify-reply-from-proxy.mjs --upstream http://127.0.0.1:8081 [--port 0]
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainModule, readOption } from './cli-args.mjs';

export const DEFAULT_FASTIFY_DIR = '/tmp/fastify-ref';

/**
 * @param {string} [dir]
 * @returns {{ fastifyPath: string, replyFromPath: string, fastifyVersion: string, replyFromVersion: string } | null}
 */
export function findFastifyReplyFrom(dir = process.env.FASTIFY_REF_DIR || DEFAULT_FASTIFY_DIR) {
  const manifest = join(dir, 'package.json');
  if (!existsSync(manifest)) return null;
  const require = createRequire(manifest);
  try {
    return {
      fastifyPath: require.resolve('fastify'),
      replyFromPath: require.resolve('@fastify/reply-from'),
      fastifyVersion: require('fastify/package.json').version,
      replyFromVersion: require('@fastify/reply-from/package.json').version,
    };
  } catch {
    return null;
  }
}

/**
 * @param {object} options
 * @param {string} options.upstream
 * @param {number} [options.port]
 * @param {string} [options.host]
 * @param {string} [options.dir] where fastify and @fastify/reply-from are installed
 */
export async function startFastifyReplyFromProxy(options) {
  const found = findFastifyReplyFrom(options.dir);
  if (!found) throw new Error('fastify and @fastify/reply-from are not installed in FASTIFY_REF_DIR');
  const { default: Fastify } = await import(pathToFileURL(found.fastifyPath).href);
  const { default: replyFrom } = await import(pathToFileURL(found.replyFromPath).href);
  const host = options.host ?? '127.0.0.1';

  const app = Fastify({ logger: false });
  // Same as the bare proxies: the body travels as bytes, never parsed and re-serialised.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  await app.register(replyFrom, {
    base: options.upstream,
    undici: { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 },
  });
  app.post('/*', (request, reply) => {
    reply.from(request.url);
  });
  await app.listen({ port: options.port ?? 0, host });
  const port = app.server.address().port;
  return { server: app.server, port, url: `http://${host}:${port}`, close: () => app.close(), versions: found };
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const upstream = readOption(argv, 'upstream', 'UPSTREAM');
  if (!upstream) {
    process.stderr.write('fastify-reply-from-proxy: --upstream URL (or UPSTREAM) is required\n');
    process.exit(2);
  }
  const proxy = await startFastifyReplyFromProxy({
    upstream,
    port: Number(readOption(argv, 'port', 'PORT', '0')),
    host: readOption(argv, 'host', 'HOST', '127.0.0.1'),
  });
  process.stdout.write(`listening ${proxy.port}\n`);
  const stop = () => proxy.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
