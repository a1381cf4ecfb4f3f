// Open streams, so shutdown can end them with a final error event instead of cutting them.
import type { StreamErrorType } from '../errors.js';

export interface EndableStream {
  endWithError(type: StreamErrorType): void;
}

export class ActiveStreams {
  private readonly streams = new Set<EndableStream>();

  add(stream: EndableStream): void {
    this.streams.add(stream);
  }

  delete(stream: EndableStream): void {
    this.streams.delete(stream);
  }

  get size(): number {
    return this.streams.size;
  }

  endAll(type: StreamErrorType): void {
    for (const stream of [...this.streams]) stream.endWithError(type);
  }
}
