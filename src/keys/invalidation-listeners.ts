// The listeners a key store tells about changed keys (cache invalidation); one failing
// listener must not keep the others from hearing.
import type { Logger } from '../logger.js';
import type { InvalidationListener } from './key-store.js';

export class InvalidationListeners {
  private readonly listeners = new Set<InvalidationListener>();

  constructor(private readonly logger: Logger) {}

  add(listener: InvalidationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(hash: string): void {
    for (const listener of this.listeners) {
      try {
        listener(hash);
      } catch (error) {
        this.logger.error({ err: error }, 'key invalidation listener failed');
      }
    }
  }
}
