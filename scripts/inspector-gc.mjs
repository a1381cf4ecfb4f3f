// A full garbage collection in another Node process, through its V8 inspector (a child
// started with `--inspect=127.0.0.1:0`), and what it still holds afterwards. RSS and
// "heap used" from /metrics include garbage not collected yet and pages V8 keeps once it has
// grown: both rise with the requests served and then level off (in the Redis fault test,
// RSS 184 → 297 MB over five rounds of faults, flat over the last three), so they cannot tell
// a leak from a busy run. What survives a full collection can. Used by the soak
// (scripts/soak.mjs) and the fault tests; the product never opens its inspector.

/** The line Node prints on stderr once the inspector listens. */
const LISTENING = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/;

/** The inspector's WebSocket URL in a child's output, or undefined before it printed it. */
export function inspectorUrlIn(output) {
  return LISTENING.exec(output)?.[1];
}

/**
 * Connects to the inspector at `url`. collectGarbage() runs a full collection and answers the
 * process's memory after it; close() disconnects (a process with a client attached waits for
 * it to leave before it exits).
 */
export async function connectInspector(url, timeoutMs = 10_000) {
  const socket = new WebSocket(url);
  const pending = new Map();
  let nextId = 0;
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data));
    const waiter = pending.get(message.id);
    if (waiter === undefined) return;
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(`inspector: ${message.error.message}`));
    else waiter.resolve(message.result);
  });
  socket.addEventListener('close', () => {
    for (const waiter of pending.values()) waiter.reject(new Error('the inspector closed before answering'));
    pending.clear();
  });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer from the inspector at ${url}`)), timeoutMs);
    socket.addEventListener('open', () => (clearTimeout(timer), resolve()), { once: true });
    socket.addEventListener('error', () => (clearTimeout(timer), reject(new Error(`cannot reach the inspector at ${url}`))), { once: true });
  });
  const call = (method, params = {}) =>
    new Promise((resolve, reject) => {
      if (socket.readyState !== WebSocket.OPEN) return reject(new Error('the inspector connection is closed'));
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return {
    async collectGarbage() {
      // Twice: objects freed by the first collection's finalizers go in the second.
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      const reply = await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
      const usage = JSON.parse(reply.result.value);
      return { heapUsedBytes: usage.heapUsed, externalBytes: usage.external };
    },
    close() {
      socket.close();
    },
  };
}
