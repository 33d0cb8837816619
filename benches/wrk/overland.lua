-- wrk: POST /v1/ingest/overland with 100 locations of one device per request
-- (Overland's batch: GeoJSON Features, speed in m/s), round-robin over the
-- device tokens in $WRK_TOKENS; the same positions and times as batch100.lua.

local tokens = {}
local counter = 0
local base = 0

function init(args)
  for line in io.lines(os.getenv("WRK_TOKENS")) do
    if line ~= "" then tokens[#tokens + 1] = line end
  end
  base = os.time() - 600
end

function request()
  counter = counter + 1
  local token = tokens[(counter % #tokens) + 1]
  -- 100 ms a turn of the round robin: a run spans a few seconds of device
  -- time, and the next run (its base seconds later) repeats none of it.
  local millis = math.floor(counter / #tokens) * 100
  local features = {}
  for i = 1, 100 do
    features[i] = string.format(
      '{"type":"Feature","geometry":{"type":"Point","coordinates":[%.5f,%.5f]},'
        .. '"properties":{"timestamp":"%s.%03dZ","speed":24.8,"course":90,"horizontal_accuracy":5,"battery_level":0.8}}',
      -96.0 - (counter % 997) / 1000, 32.0 + i / 1000,
      os.date("!%Y-%m-%dT%H:%M:%S", base + math.floor((millis + i) / 1000)), (millis + i) % 1000)
  end
  return wrk.format("POST", "/v1/ingest/overland", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. token,
  }, '{"locations":[' .. table.concat(features, ",") .. ']}')
end
