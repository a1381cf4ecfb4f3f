// The protocol's cancel method for a task the client no longer waits for (its disconnect, a
// deadline, shutdown), as an Agent Chat runner's request is aborted. Sent once, on the pool
// of the target that runs the task, and never waited for: the client is gone, and an agent
// that does not answer it must not hold anything of the gateway's.
import { metrics } from '../../metrics/metrics.js';
import type { UpstreamTarget } from '../upstream-target.js';
import { A2A_VERSION_HEADER, encodeCancelRequest, type A2aVersion } from './a2a-protocol.js';

const CANCEL_TIMEOUT_MS = 5_000;

export function cancelA2aTask(target: UpstreamTarget, version: A2aVersion, taskId: string, agentId: string): void {
  const body = encodeCancelRequest(version, taskId, `cancel-${taskId}`);
  target.pool
    .request({
      method: 'POST',
      path: target.chatPath,
      headers: { 'content-type': 'application/json', accept: 'application/json', [A2A_VERSION_HEADER]: version },
      body,
      headersTimeout: CANCEL_TIMEOUT_MS,
      bodyTimeout: CANCEL_TIMEOUT_MS,
    })
    .then(
      (answer) => {
        metrics.a2aTaskCancels.inc({ agent: agentId, outcome: 'answered' });
        return answer.body.dump();
      },
      () => metrics.a2aTaskCancels.inc({ agent: agentId, outcome: 'failed' }),
    )
    .catch(() => undefined);
}
