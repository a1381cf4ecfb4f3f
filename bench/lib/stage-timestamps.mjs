// Preloaded (`node --import`) into the process bench/run.mjs stream-stages measures: the moments a
// stream's start passes, from node:http's and undici's diagnostics channels, keyed by the
// stream's `x-request-id` (the gateway forwards the client's to the runner; bare undici copies
// every header). On SIGUSR2 it writes what it has to /tmp/agentgw-stages-<pid>.json and
// starts over.
import dc from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';

const rows = new Map();

/** The x-request-id of a request undici reports on its diagnostics channels (also hand-off-probe.mjs's). */
export function idOfUndiciRequest(request) {
  const headers = request.headers;
  if (typeof headers === 'string') return /x-request-id: ([^\r\n]+)/i.exec(headers)?.[1];
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === 'x-request-id') return String(headers[i + 1]);
  }
  return undefined;
}

function stamp(id, stage) {
  if (id === undefined) return;
  let row = rows.get(id);
  if (row === undefined) rows.set(id, (row = {}));
  row[stage] ??= performance.now();
}

dc.subscribe('http.server.request.start', ({ request }) => {
  const id = request.headers['x-request-id'];
  stamp(id, 'requestStart');
  // 'end' comes when the body has been read: the gateway reads it after the key and limit stages.
  request.once('end', () => stamp(id, 'bodyRead'));
});
dc.subscribe('undici:request:create', ({ request }) => stamp(idOfUndiciRequest(request), 'dispatched'));
dc.subscribe('undici:client:sendHeaders', ({ request }) => stamp(idOfUndiciRequest(request), 'sentToRunner'));
dc.subscribe('undici:request:headers', ({ request }) => stamp(idOfUndiciRequest(request), 'runnerHead'));

process.on('SIGUSR2', () => {
  writeFileSync(`/tmp/agentgw-stages-${process.pid}.json`, JSON.stringify([...rows.values()]));
  rows.clear();
});
