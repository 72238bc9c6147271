-- The HTTP suite's wrk script (bench/http_suite.py).
--
-- With WRK_POST_BYTES set, every request is a POST of that many bytes (wrk
-- adds Content-Length itself).  No request() or response() hook: wrk keeps
-- its prebuilt-request fast path, so the script costs nothing per request.
-- done() prints one line the harness reads: "WRK_RESULT {json}".

local post_bytes = tonumber(os.getenv("WRK_POST_BYTES") or "")
if post_bytes then
  wrk.method = "POST"
  wrk.body = string.rep("x", post_bytes)
  wrk.headers["Content-Type"] = "application/octet-stream"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests": %d, "duration_us": %d, "bytes": %d, ' ..
    '"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d, ' ..
    '"p50_us": %.1f, "p90_us": %.1f, "p99_us": %.1f, "mean_us": %.1f, "max_us": %.1f}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end
