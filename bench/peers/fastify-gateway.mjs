// Peer 1 of `npm run bench` (issue 26): the gateway a Node developer assembles from the
// usual parts, doing per request what agent-gateway's features do that these parts cover:
//   - fastify 5 with its built-in JSON body parser (the body is parsed, like the gateway
//     validates it; reply-from sends it on re-serialised);
//   - a preHandler that looks the bearer token up in Redis (GET of the token's SHA-256,
//     not cached: the plain way to do it; the record names the account);
//   - @fastify/rate-limit with its Redis store (ioredis), keyed by that account, limits no
//     bench run reaches (like the gateway's bench plan);
//   - @fastify/reply-from to the runner over undici, streams relayed as they come;
//   - pino request logging at info (fastify's "incoming request" and "request completed"
//     lines) to a file through an asynchronous destination, as the gateway's log is.
// It does not write an audit record and has no metrics: the gateway does both on top.
//
//   node bench/peers/fastify-gateway.mjs --upstream http://127.0.0.1:8081 --redis redis://… \
//     --key-prefix bench: --log /tmp/fastify.log [--port 0]
//   prints `listening <port>` once it takes traffic.
//
// The key record is written by the bench (bench/lib/peers.mjs): SET <prefix>peer-key:<sha256>
// with {"account":…} (bench/peers/peer-key.mjs).
import rateLimit from '@fastify/rate-limit';
import replyFrom from '@fastify/reply-from';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import pino from 'pino';
import { peerKeyName } from './peer-key.mjs';

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i !== -1 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (fallback === undefined) {
    process.stderr.write(`fastify-gateway: --${name} is required\n`);
    process.exit(2);
  }
  return fallback;
}

const upstream = option('upstream');
const redisUrl = option('redis');
const keyPrefix = option('key-prefix', 'bench:');
const logFile = option('log');
const port = Number(option('port', '0'));

const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
const app = Fastify({
  logger: { level: 'info', stream: pino.destination({ dest: logFile, sync: false, minLength: 4096 }) },
});

const UNAUTHORIZED = { error: { type: 'authentication_error', message: 'missing or unknown API key' } };

app.decorateRequest('account', null);
// Instance hooks run before the route-level hook the rate limiter adds, so the limiter
// sees the account this one found.
app.addHook('preHandler', async (request, reply) => {
  const header = request.headers.authorization;
  if (typeof header !== 'string' || !header.startsWith('Bearer ')) return reply.code(401).send(UNAUTHORIZED);
  const record = await redis.get(peerKeyName(keyPrefix, header.slice(7)));
  if (record === null) return reply.code(401).send(UNAUTHORIZED);
  request.account = JSON.parse(record).account;
});

await app.register(rateLimit, {
  hook: 'preHandler',
  redis,
  max: 100_000_000,
  timeWindow: 60_000,
  keyGenerator: (request) => request.account,
});
await app.register(replyFrom, {
  base: upstream,
  undici: { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 },
});

const forward = (request, reply) =>
  reply.from(request.url, {
    // The runner does not need the client's key.
    rewriteRequestHeaders: (_req, headers) => {
      const { authorization: _dropped, ...rest } = headers;
      return rest;
    },
  });
app.post('/api/v1/chat', forward);
app.post('/api/v1/chat/stream', forward);

await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`listening ${app.server.address().port}\n`);
const stop = () =>
  app
    .close()
    .then(() => redis.quit())
    .finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
