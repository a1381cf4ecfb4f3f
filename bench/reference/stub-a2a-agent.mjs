// The stub runner's A2A face (docs/a2a.md; decision 0058): the same answers in A2A 1.0's
// JSON-RPC, so the bench can put the gateway's A2A adapter beside its native protocol on one
// stub. Cheap like the rest of the stub: bodies built once, the method found by a substring.
//
// GET  /.well-known/agent-card.json  a 1.0 card: one JSONRPC interface at /a2a, streaming.
// POST /a2a  SendMessage           a completed Task whose artifact is CHAT_RESPONSE's text.
// POST /a2a  SendStreamingMessage  the Task, then one artifact update per token (its text
//                                  carries `seq=N sent_at=T`, which the timing client reads as
//                                  it reads the native stream's seq and sent_at), then the
//                                  completed status with `tokens_used` in its metadata. The
//                                  x-bench-stream parameters apply as to the native stream.
import { performance } from 'node:perf_hooks';

const TIME_ORIGIN_MS = performance.timeOrigin;
// The gateway matches each answer to its request's JSON-RPC id (a mismatch is a bad answer,
// decision 0083's round): the stub echoes it, found by a regex rather than by parsing the body.
const REQUEST_ID = /"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)/;

/** The request's top-level JSON-RPC id as JSON text (the gateway writes it before the params). */
export function requestId(body) {
  const match = REQUEST_ID.exec(body);
  return match === null ? 'null' : match[1];
}

export function a2aCard(origin) {
  return JSON.stringify({
    name: 'bench stub',
    description: 'The bench stub runner as an A2A agent.',
    supportedInterfaces: [{ url: `${origin}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [{ id: 'stub', name: 'Stub', description: 'Answers at once.', tags: ['bench'] }],
  });
}

/** A completed Task answering request `id` (JSON text). */
export function a2aTaskBody(text, tokens, id) {
  return Buffer.from(
    `{"jsonrpc":"2.0","id":${id},"result":{"task":{"id":"bench-task","contextId":"bench-context","status":{"state":"TASK_STATE_COMPLETED"},` +
      `"artifacts":[{"artifactId":"a","parts":[{"text":${JSON.stringify(text)}}]}],"metadata":{"model":"stub-runner-1","tokens_used":${tokens}}}}}`,
  );
}

/** The stream dialect of stub-runner.mjs's stream() for request `id`: a start, a token, a done. */
export const a2aDialect = (id) => ({
  start: `data: {"jsonrpc":"2.0","id":${id},"result":{"task":{"id":"bench-task","contextId":"bench-context","status":{"state":"TASK_STATE_SUBMITTED"}}}}\n\n`,
  token(seq) {
    const sentAt = (TIME_ORIGIN_MS + performance.now()).toFixed(3);
    return `data: {"jsonrpc":"2.0","id":${id},"result":{"artifactUpdate":{"taskId":"bench-task","contextId":"bench-context","artifact":{"artifactId":"a","parts":[{"text":"tok${seq} seq=${seq} sent_at=${sentAt} "}]},"append":${seq > 0}}}}\n\n`;
  },
  done: (tokens) =>
    `data: {"jsonrpc":"2.0","id":${id},"result":{"statusUpdate":{"taskId":"bench-task","contextId":"bench-context","status":{"state":"TASK_STATE_COMPLETED"},"metadata":{"tokens_used":${tokens}}}}}\n\n`,
});

/** Marks a streaming send without parsing the body. */
export const STREAMING_SEND = /"method"\s*:\s*"SendStreamingMessage"/;
