-- wrk script for the Rota benchmarks (bench/lib/wrk.ts builds the command line).
-- Arguments after "--": method, path (may be an absolute URI, for a forward proxy), body ("" for none),
-- then any number of "Name: value" headers. The request is formatted once per thread, so the script
-- costs nothing per request; done() prints one machine-readable line with the figures the harness needs.

function init(args)
  wrk.method = args[1] or "GET"
  wrk.path = args[2] or "/"
  if args[3] ~= nil and args[3] ~= "" then
    wrk.body = args[3]
  end
  for i = 4, #args do
    local name, value = string.match(args[i], "^([^:]+):%s*(.*)$")
    if name then
      wrk.headers[name] = value
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
