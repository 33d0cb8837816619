-- wrk: POST a fresh GPS fix per request (never a duplicate, which freight
-- answers more cheaply), spread round-robin over the loads listed in the file
-- named by $WRK_LOADS. With $WRK_THREADS set to wrk's -t, each thread takes its
-- own slice of the loads (every $WRK_THREADS-th), as each device of a fleet
-- posts its own fixes in time order; threads also take their own microsecond
-- offsets, so (load, timestamp) never repeats. Without it, threads share the
-- loads and a load's fixes arrive out of order, which costs freight a lookup
-- each (a fix older than the load's newest may be a duplicate).

local loads = {}
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
  local threads = tonumber(os.getenv("WRK_THREADS") or "1")
  local n = 0
  for line in io.lines(os.getenv("WRK_LOADS")) do
    if line ~= "" then
      if n % threads == thread_index % threads then loads[#loads + 1] = line end
      n = n + 1
    end
  end
  if #loads == 0 then error("no loads for thread " .. thread_index .. " in $WRK_LOADS") end
  -- Ten minutes ago: fixes may be up to 30 days old, at most 5 minutes ahead.
  base = os.time() - 600
end

function request()
  counter = counter + 1
  local load = loads[(counter % #loads) + 1]
  -- One microsecond per request, threads a second apart.
  local micros = counter + thread_index * 1000000
  local seconds = base + math.floor(micros / 1000000) + thread_index * 100
  local stamp = os.date("!%Y-%m-%dT%H:%M:%S", seconds) .. string.format(".%06dZ", micros % 1000000)
  local body = string.format(
    '{"lat":%.5f,"lng":%.5f,"timestamp":"%s","speed":55.5,"heading":90}',
    32.0 + (counter % 1000) / 1000, -96.0 - (counter % 997) / 1000, stamp)
  return wrk.format("POST", "/v1/loads/" .. load .. "/tracking", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("WRK_KEY"),
  }, body)
end
