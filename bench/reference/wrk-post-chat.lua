-- wrk script: the same small JSON chat POST autocannon sends, and a machine-readable
-- summary line (prefixed WRK_JSON) for bench/measure-proxies.mjs to parse.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"message":"Hello, what can you do?","context":{"user_id":"u-1","session_id":"s-1"},"temperature":0.7,"max_tokens":256}'

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
