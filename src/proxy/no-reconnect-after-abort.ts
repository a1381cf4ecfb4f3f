// undici (7.x, and 8.x up to at least 8.10: nodejs/undici#5845, fix proposed in #5846)
// re-queues an in-flight request that was aborted and opens a NEW connection for it, only
// to drop the request once connected. Every stream whose client leaves therefore costs a
// fresh upstream connection that then sits idle in the pool; when thousands of streams end
// at once (a load balancer draining, a client fleet restarting) the gateway opens thousands
// of useless sockets in a burst, which sets its memory peak (decision 0004).
//
// The workaround: each pool Client gets its own connector that refuses the one connect that
// follows an "aborted" disconnect, in the same synchronous call (undici connects from inside
// the socket's close handler, right after emitting 'disconnect'). The refusal is a connect
// error, so undici drops the aborted request and the Pool discards that Client (it removes a
// Client on 'connectionError'); the next request gets a new Client. The flag is cleared by
// the next request dispatched to the Client (a request that is wanted: its connect must go
// through, even when it comes before the microtask — a request handed over from a
// process.nextTick callback does), and in a microtask, so when undici stops reconnecting a
// later, real connect is never refused.
//
// One case the guard cannot tell apart: a request aborted before undici wrote it (its client
// left while it waited for the connection) is taken off the queue at once, and its socket is
// destroyed but closes only in a later phase of the event loop. In between the Client is idle,
// the Pool may hand it a wanted request, and that request is the one pending when the
// 'aborted' disconnect comes: it gets the refusal. It was never sent, so whoever dispatched it
// sends it again (isAbortedReconnectSkipped); upstream-dispatch.ts does.
import type { buildConnector, Client as ClientClass, Dispatcher } from 'undici';
import { Client } from './undici-classes.js';

/** The connect error that ends undici's pointless reconnect (rarely a wanted request's: see above). */
export class AbortedReconnectSkipped extends Error {
  readonly code = 'AGW_ABORTED_RECONNECT_SKIPPED';
  constructor() {
    super('reconnect for an aborted request skipped');
    this.name = 'AbortedReconnectSkipped';
  }
}

// One instance: a burst of departing clients refuses thousands of connects, and a stack
// trace each would say nothing.
const RECONNECT_SKIPPED = new AbortedReconnectSkipped();

/** The guard's refusal reached this request: it was never sent, and the runner is not at fault. */
export function isAbortedReconnectSkipped(error: unknown): boolean {
  return error === RECONNECT_SKIPPED;
}

/** undici's message for the socket it destroys when an in-flight request is aborted. */
function isAbortDisconnect(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e !== null && typeof e === 'object' && e.code === 'UND_ERR_INFO' && e.message === 'aborted';
}

/**
 * A Pool `factory` whose Clients do not reconnect for requests that were aborted. The Pool
 * hands each Client its connector (built from the Pool's connectTimeout etc.); ours wraps it.
 */
export function clientWithoutAbortReconnect(origin: URL, options: object): Dispatcher {
  const clientOptions = options as ClientClass.Options & { connect: buildConnector.connector };
  const connect = clientOptions.connect;
  let refuseNextConnect = false;
  const client = new Client(origin, {
    ...clientOptions,
    connect: (connectOptions, callback) => {
      if (!refuseNextConnect) {
        connect(connectOptions, callback);
        return;
      }
      refuseNextConnect = false;
      callback(RECONNECT_SKIPPED, null);
    },
  });
  // undici's own re-queue of the aborted request does not go through dispatch; a new one does.
  const dispatch = client.dispatch.bind(client);
  client.dispatch = (dispatchOptions, handler) => {
    refuseNextConnect = false;
    return dispatch(dispatchOptions, handler);
  };
  client.on('disconnect', (_origin, _targets, error) => {
    if (!isAbortDisconnect(error)) return;
    refuseNextConnect = true;
    queueMicrotask(() => {
      refuseNextConnect = false;
    });
  });
  return client;
}
