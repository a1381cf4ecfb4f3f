// The webhook events' producers (docs/notifications-events.md), built once per gateway from
// the notifications settings: key lifecycle events for KeyService, the key expiry sweeper,
// the upstream transitions listener, and the budget threshold watch for the request
// pipeline. With notifications off nothing is built, and the request path pays one
// property check.
import type { Clock } from '../clock.js';
import { KeyEvents, type KeyEventPublisher } from '../keys/key-events.js';
import { KeyExpirySweeper } from '../keys/key-expiry-sweeper.js';
import type { KeyStore } from '../keys/key-store.js';
import type { Logger } from '../logger.js';
import type { TargetTransition } from '../proxy/agent-upstreams.js';
import { upstreamEventListener, type UpstreamEventPublisher } from '../proxy/upstream-events.js';
import { BudgetThresholds, type ThresholdPublisher } from '../ratelimit/budget-thresholds.js';

/** What every producer needs of the notifier (src/notifications/notifier.ts). */
export type EventPublisher = KeyEventPublisher & UpstreamEventPublisher & ThresholdPublisher;

export interface EventProducerSettings {
  /** Fractions of a window's limit (empty: no budget.threshold). */
  budgetThresholds: readonly number[];
  keyExpiryWarningMs: number;
  keyExpirySweepMs: number;
}

/** Keys of each kind one expiry sweep reads. */
export const EXPIRY_SWEEP_PAGE = 200;

export interface EventProducers {
  keyEvents: KeyEvents | undefined;
  budgetThresholds: BudgetThresholds | undefined;
  onTransition: ((transition: TargetTransition) => void) | undefined;
  close(): Promise<void>;
}

export const NO_EVENT_PRODUCERS: EventProducers = {
  keyEvents: undefined,
  budgetThresholds: undefined,
  onTransition: undefined,
  close: async () => {},
};

/** `publisher` undefined: notifications are off, and nothing is built. */
export function startEventProducers(
  publisher: EventPublisher | undefined,
  settings: EventProducerSettings,
  deps: { keyStore: KeyStore; clock: Clock; logger: Logger },
): EventProducers {
  if (publisher === undefined) return NO_EVENT_PRODUCERS;
  const keyEvents = new KeyEvents({ publisher, expiryWarningMs: settings.keyExpiryWarningMs });
  const index = deps.keyStore.expiry;
  const sweeper =
    index &&
    new KeyExpirySweeper({ index, store: deps.keyStore, events: keyEvents, intervalMs: settings.keyExpirySweepMs, pageSize: EXPIRY_SWEEP_PAGE, clock: deps.clock, logger: deps.logger });
  sweeper?.start();
  return {
    keyEvents,
    budgetThresholds: settings.budgetThresholds.length === 0 ? undefined : new BudgetThresholds(settings.budgetThresholds, publisher, deps.clock),
    onTransition: upstreamEventListener(publisher, deps.clock),
    close: async () => {
      await sweeper?.stop();
    },
  };
}
