// Raw bytes on a fresh TCP socket, for the fault suites that speak HTTP/1.1 by hand
// (hostile-input, socket-fuzz). What differs between them is only when an exchange counts
// as over; that rule is the caller's `idleMsAfter`.
import { connect } from 'node:net';

export interface RawExchangeOptions {
  /** Waits between two pieces (a slow client); default: none. */
  between?: () => Promise<void>;
  /**
   * Called with every byte received so far on each arrival, and once after the last piece is
   * written (`allWritten`): a number (re)starts the timer that ends the exchange after that
   * many ms; undefined leaves any running timer as it is (the exchange also ends when the
   * server closes, or at `boundMs`).
   */
  idleMsAfter(received: Buffer, allWritten: boolean): number | undefined;
  /** The exchange ends at the latest this long after it started. */
  boundMs: number;
}

export interface RawExchangeResult {
  received: Buffer;
  /** The server ended or closed the connection. */
  closedByServer: boolean;
  elapsedMs: number;
}

export function rawExchange(port: number, pieces: ReadonlyArray<string | Buffer>, options: RawExchangeOptions): Promise<RawExchangeResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let done = false;
    let idle: NodeJS.Timeout | undefined;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      clearTimeout(bound);
      socket.destroy();
      resolve({ received: Buffer.concat(chunks), closedByServer, elapsedMs: performance.now() - started });
    };
    const bound = setTimeout(finish, options.boundMs);
    let allWritten = false;
    const armIdle = (): void => {
      const waitMs = options.idleMsAfter(Buffer.concat(chunks), allWritten);
      if (waitMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(finish, waitMs);
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      armIdle();
    });
    socket.on('error', () => {});
    socket.on('end', () => (closedByServer = true));
    socket.on('close', () => {
      closedByServer = true;
      finish();
    });
    socket.on('connect', async () => {
      for (const [i, piece] of pieces.entries()) {
        if (socket.destroyed) return;
        socket.write(piece);
        if (i < pieces.length - 1 && options.between) await options.between();
      }
      allWritten = true;
      armIdle();
    });
  });
}
