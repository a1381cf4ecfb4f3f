// The primary ↔ worker IPC messages (src/cli/cluster-messages.ts): each decoder reads back what
// its encoder wrote, and answers undefined for anything else — another message type, another
// protocol version, prom-client's or node's own messages on the same channel, a field of the
// wrong type — so nothing on the channel can crash the primary or be misread.
import { describe, expect, it } from 'vitest';
import {
  decodeInstanceStatus,
  decodeMetricsCollect,
  decodeMetricsGathered,
  decodeMetricsPart,
  decodeMetricsRequest,
  decodeStartFailed,
  decodeStatusRequest,
  decodeWorkerListening,
  decodeWorkerSettings,
  encodeInstanceStatus,
  encodeMetricsCollect,
  encodeMetricsGathered,
  encodeMetricsPart,
  encodeMetricsRequest,
  encodeStartFailed,
  encodeStatusRequest,
  encodeWorkerListening,
  encodeWorkerSettings,
} from '../../../src/cli/cluster-messages.js';

const settings = { shutdownGraceMs: 2_000, logLevel: 'info', logFile: null };
const listening = { ...settings, port: 8080, adminPort: 9090, host: '127.0.0.1', tls: false, mode: 'redis' as const, demoAgentUrl: null };

describe('cluster IPC messages', () => {
  it('decode what their encoder wrote, through a structured clone as IPC carries it', () => {
    const roundTrip = (message: object): unknown => JSON.parse(JSON.stringify(message));
    expect(decodeWorkerSettings(roundTrip(encodeWorkerSettings(settings)))).toEqual(settings);
    expect(decodeWorkerListening(roundTrip(encodeWorkerListening(listening)))).toEqual(listening);
    expect(decodeWorkerListening(roundTrip(encodeWorkerListening({ ...listening, adminPort: null, demoAgentUrl: 'http://127.0.0.1:8081/api/v1', logFile: '/var/log/gw.jsonl' })))).toMatchObject({ adminPort: null, logFile: '/var/log/gw.jsonl' });
    expect(decodeStartFailed(roundTrip(encodeStartFailed('invalid config x.yaml:\n  - listen.bogus')))).toEqual({ text: 'invalid config x.yaml:\n  - listen.bogus' });
    expect(decodeMetricsRequest(roundTrip(encodeMetricsRequest(7)))).toEqual({ id: 7 });
    expect(decodeMetricsCollect(roundTrip(encodeMetricsCollect(8)))).toEqual({ id: 8 });
    expect(decodeMetricsPart(roundTrip(encodeMetricsPart(8, [{ name: 'm', values: [] }])))).toEqual({ id: 8, metrics: [{ name: 'm', values: [] }] });
    expect(decodeMetricsGathered(roundTrip(encodeMetricsGathered(7, [[], [{ name: 'm' }]])))).toEqual({ id: 7, parts: [[], [{ name: 'm' }]] });
    expect(decodeStatusRequest(roundTrip(encodeStatusRequest(9)))).toEqual({ id: 9 });
    expect(decodeInstanceStatus(roundTrip(encodeInstanceStatus(9, { workers: 2, listening: 1, stopping: true })))).toEqual({ id: 9, workers: 2, listening: 1, stopping: true });
  });

  it('tell the messages apart: no decoder accepts another message', () => {
    const messages = [encodeWorkerSettings(settings), encodeWorkerListening(listening), encodeStartFailed('x'), encodeMetricsRequest(1), encodeMetricsCollect(1), encodeMetricsPart(1, []), encodeMetricsGathered(1, []), encodeStatusRequest(1), encodeInstanceStatus(1, { workers: 1, listening: 1, stopping: false })];
    const decoders = [decodeWorkerSettings, decodeWorkerListening, decodeStartFailed, decodeMetricsRequest, decodeMetricsCollect, decodeMetricsPart, decodeMetricsGathered, decodeStatusRequest, decodeInstanceStatus];
    decoders.forEach((decode, d) => messages.forEach((message, m) => expect(decode(message) !== undefined, `decoder ${d} on message ${m}`).toBe(d === m)));
  });

  it('answer undefined for what is not theirs or is malformed', () => {
    const foreign: unknown[] = [
      undefined,
      null,
      'worker-listening',
      42,
      [],
      { type: 'prom-client:getMetricsReq', requestId: 1 },
      { cmd: 'NODE_CLUSTER', act: 'online' },
      { ...encodeMetricsRequest(1), v: 2 },
      { ...encodeMetricsRequest(1), protocol: 'other' },
      { ...encodeMetricsRequest(1), id: -1 },
      { ...encodeMetricsRequest(1), id: 1.5 },
      { ...encodeMetricsRequest(1), id: '1' },
    ];
    for (const message of foreign) {
      expect(decodeMetricsRequest(message)).toBeUndefined();
      expect(decodeWorkerListening(message)).toBeUndefined();
      expect(decodeStartFailed(message)).toBeUndefined();
    }
    expect(decodeWorkerListening({ ...encodeWorkerListening(listening), port: 70_000 })).toBeUndefined();
    expect(decodeWorkerListening({ ...encodeWorkerListening(listening), mode: 'cluster' })).toBeUndefined();
    expect(decodeWorkerListening({ ...encodeWorkerListening(listening), shutdownGraceMs: '30s' })).toBeUndefined();
    expect(decodeWorkerSettings({ ...encodeWorkerSettings(settings), logLevel: 3 })).toBeUndefined();
    expect(decodeStartFailed({ ...encodeStartFailed('x'), text: { toString: 'x' } })).toBeUndefined();
    expect(decodeMetricsPart({ ...encodeMetricsPart(1, []), metrics: 'all' })).toBeUndefined();
    expect(decodeMetricsGathered({ ...encodeMetricsGathered(1, []), parts: [[], 'x'] })).toBeUndefined();
    expect(decodeInstanceStatus({ ...encodeInstanceStatus(1, { workers: 2, listening: 2, stopping: false }), stopping: 'no' })).toBeUndefined();
  });
});
