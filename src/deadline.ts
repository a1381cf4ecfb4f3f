// A time bound for a Redis (or any) call on the request path. When the timer fires, the
// reply may already sit unread in the socket: a busy event loop runs expired timers before
// it polls for I/O. Deferring the verdict with setImmediate (which runs after that poll)
// means only a reply that truly has not come counts as a timeout; a false one would, in
// the middle of a burst, fail the limiter over to per-instance counts or turn a cold key
// lookup into a 503. The bound is therefore `timeoutMs` plus one event-loop turn.

export class DeadlineExceededError extends Error {
  constructor(readonly timeoutMs: number, what: string) {
    super(`${what}: no answer within ${timeoutMs} ms`);
    this.name = 'DeadlineExceededError';
  }
}

export function withDeadline<T>(work: Promise<T>, timeoutMs: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (done) return;
        done = true;
        reject(onTimeout());
      });
    }, timeoutMs);
    work.then(
      (value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * ioredis' own commandTimeout is only a backstop against a connection that never answers;
 * the request path's bound is `withDeadline` above. Set well past the configured timeout so
 * it never races it.
 */
export function backstopTimeoutMs(commandTimeoutMs: number): number {
  return Math.max(1_000, commandTimeoutMs * 10);
}
