// The webhook events' producers that run beside the request path (docs/notifications-events.md):
// the key expiry sweeper and the budget threshold watch the request pipeline calls. Key
// lifecycle events come from KeyService (admin-context.ts, keyEventsOf) and upstream events
// from the upstream pools (upstream-pools.ts), each over the same notifier. With no webhook
// configured nothing is built, and the request path pays one property check.
import type { Clock } from '../clock.js';
import type { NotificationsConfig } from '../config/schema.js';
import { keyEventsOf } from '../keys/key-events.js';
import { KeyExpirySweeper } from '../keys/key-expiry-sweeper.js';
import type { KeyStore } from '../keys/key-store.js';
import type { Logger } from '../logger.js';
import type { Notifier } from '../notifications/notifier.js';
import { BudgetThresholds } from '../ratelimit/budget-thresholds.js';

/** Keys of each kind one expiry sweep reads. */
export const EXPIRY_SWEEP_PAGE = 200;

export interface EventProducers {
  budgetThresholds: BudgetThresholds | undefined;
  close(): Promise<void>;
}

export function startEventProducers(
  notifier: Notifier,
  settings: Pick<NotificationsConfig, 'budgetThresholds' | 'keyExpiryWarningMs' | 'keyExpirySweepMs'>,
  deps: { keyStore: KeyStore; clock: Clock; logger: Logger },
): EventProducers {
  const events = keyEventsOf(notifier, settings.keyExpiryWarningMs);
  if (events === undefined) return { budgetThresholds: undefined, close: async () => {} };
  const index = deps.keyStore.expiry;
  const sweeper =
    index &&
    new KeyExpirySweeper({ index, store: deps.keyStore, events, intervalMs: settings.keyExpirySweepMs, pageSize: EXPIRY_SWEEP_PAGE, clock: deps.clock, logger: deps.logger });
  sweeper?.start();
  return {
    budgetThresholds: settings.budgetThresholds.length === 0 ? undefined : new BudgetThresholds(settings.budgetThresholds, notifier, deps.clock),
    close: async () => {
      await sweeper?.stop();
    },
  };
}
