-- wrk: a position per request as Traccar Client 7 posts it (POST, the query
-- string, an empty body; speed in knots, time in Unix milliseconds), round-robin
-- over the device tokens in the file named by $WRK_TOKENS (one device per load,
-- attached: benches/wrk/device_setup.py). The same positions as fix.lua posts
-- through the API. A device's positions are a millisecond apart (one per turn
-- of the round robin), so a run spans well under a second of device time and
-- the next run, seconds later, repeats none; threads are 50 s apart.

local tokens = {}
local counter = 0
local base = 0
-- A global, not a local: setup() sets it in each thread's state with
-- thread:set, which a local of the same name would hide (every thread was
-- thread 0, and half of a two-thread run's fixes were duplicates).
thread_index = 0

local next_thread = 0
function setup(thread)
  thread:set("thread_index", next_thread)
  next_thread = next_thread + 1
end

function init(args)
  for line in io.lines(os.getenv("WRK_TOKENS")) do
    if line ~= "" then tokens[#tokens + 1] = line end
  end
  base = (os.time() - 600) * 1000
end

function request()
  counter = counter + 1
  local token = tokens[(counter % #tokens) + 1]
  local millis = base + math.floor(counter / #tokens) + thread_index * 50000
  return wrk.format("POST", string.format(
    "/v1/ingest/osmand?id=%s&timestamp=%d&lat=%.5f&lon=%.5f&speed=48.2&bearing=90&altitude=150&accuracy=5&batt=88",
    token, millis, 32.0 + (counter % 1000) / 1000, -96.0 - (counter % 997) / 1000))
end
