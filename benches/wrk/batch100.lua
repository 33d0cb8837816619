-- wrk: POST /v1/tracking/batch with 100 fresh fixes of one load per request
-- (a truck's buffered positions), round-robin over the loads in $WRK_LOADS:
-- the API's side of Overland's batches (overland.lua), with the same times: a
-- millisecond apart within a batch, 100 ms between one load's batches.

local loads = {}
local counter = 0
local base = 0

function init(args)
  for line in io.lines(os.getenv("WRK_LOADS")) do
    if line ~= "" then loads[#loads + 1] = line end
  end
  base = os.time() - 600
end

function request()
  counter = counter + 1
  local load = loads[(counter % #loads) + 1]
  -- 100 ms a turn of the round robin: a run spans a few seconds of load
  -- time, and the next run (its base seconds later) repeats none of it.
  local millis = math.floor(counter / #loads) * 100
  local points = {}
  for i = 1, 100 do
    points[i] = string.format(
      '{"load_id":"%s","lat":%.5f,"lng":%.5f,"timestamp":"%s.%03dZ","speed":55.5,"heading":90}',
      load, 32.0 + i / 1000, -96.0 - (counter % 997) / 1000,
      os.date("!%Y-%m-%dT%H:%M:%S", base + math.floor((millis + i) / 1000)), (millis + i) % 1000)
  end
  return wrk.format("POST", "/v1/tracking/batch", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("WRK_KEY"),
  }, '{"points":[' .. table.concat(points, ",") .. ']}')
end
