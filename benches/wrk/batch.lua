-- wrk: POST /v1/tracking/batch with 1,000 fresh fixes per request, one for each
-- of the first 1,000 loads listed in the file named by $WRK_LOADS (the bulk
-- shape: a gateway forwarding a second of a fleet's positions). Timestamps move
-- forward a millisecond per request, so no fix repeats.

local loads = {}
local counter = 0
local base = 0

function init(args)
  for line in io.lines(os.getenv("WRK_LOADS")) do
    if line ~= "" and #loads < 1000 then loads[#loads + 1] = line end
  end
  base = os.time() - 600
end

function request()
  counter = counter + 1
  local millis = counter
  local stamp = os.date("!%Y-%m-%dT%H:%M:%S", base + math.floor(millis / 1000))
    .. string.format(".%03dZ", millis % 1000)
  local points = {}
  for i, load in ipairs(loads) do
    points[i] = string.format(
      '{"load_id":"%s","lat":%.5f,"lng":%.5f,"timestamp":"%s","speed":55.5,"heading":90}',
      load, 32.0 + (i % 1000) / 1000, -96.0 - (counter % 997) / 1000, stamp)
  end
  return wrk.format("POST", "/v1/tracking/batch", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("WRK_KEY"),
  }, '{"points":[' .. table.concat(points, ",") .. ']}')
end
