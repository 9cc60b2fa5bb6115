-- wrk script for the bans workload (bench/lib/wrk-hosts.ts builds the command line): one body per wrk
-- thread, so that each thread's connections call one target host, and per-thread counts read from
-- Rota's answers (POST /api/v1/request: the target's status_code and the attempts the call took).
-- Arguments after "--": method, path, window start in seconds, then one JSON body per thread, then any
-- number of "Name: value" headers. Counts "late" are of answers received once the window started
-- (os.time() has 1 s steps: from `window` to `window + 1` s after the thread started).

local threads = {}
local count = 0

function setup(thread)
  count = count + 1
  thread:set("id", count)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = args[1]
  wrk.path = args[2]
  window = tonumber(args[3])
  local bodies = {}
  for i = 4, #args do
    local name, value = string.match(args[i], "^([%w-]+):%s*(.*)$")
    if name then
      wrk.headers[name] = value
    else
      table.insert(bodies, args[i])
    end
  end
  wrk.body = bodies[id]
  started = os.time()
  calls, ok, attempts, other = 0, 0, 0, 0
  late_calls, late_ok, late_attempts = 0, 0, 0
end

function response(status, headers, body)
  local code = tonumber(string.match(body, '"status_code":(%d+)'))
  local tries = tonumber(string.match(body, '"attempts":(%d+)')) or 0
  local good = status == 200 and code == 200
  calls = calls + 1
  attempts = attempts + tries
  if good then ok = ok + 1 end
  if status ~= 200 then other = other + 1 end
  if os.time() - started > window then
    late_calls = late_calls + 1
    late_attempts = late_attempts + tries
    if good then late_ok = late_ok + 1 end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local parts = {}
  for i, t in ipairs(threads) do
    table.insert(parts, string.format(
      '{"calls":%d,"ok":%d,"attempts":%d,"not_200":%d,"late_calls":%d,"late_ok":%d,"late_attempts":%d}',
      t:get("calls"), t:get("ok"), t:get("attempts"), t:get("other"),
      t:get("late_calls"), t:get("late_ok"), t:get("late_attempts")))
  end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,' ..
    '"timeout":%d,"p50_us":%d,"p99_us":%d,"threads":[%s]}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), table.concat(parts, ",")))
end
