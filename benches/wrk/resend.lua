-- wrk: the same batch every request, for benches/wrk/resend.sh: 100 fixes a
-- second apart for each of the first 10 loads. The first stores them; every
-- later one is all duplicates.
local body
function init(args)
  local loads = {}
  for line in io.lines(os.getenv("WRK_LOADS")) do
    if line ~= "" and #loads < 10 then loads[#loads + 1] = line end
  end
  local base = os.time() - 600
  local points = {}
  for _, load in ipairs(loads) do
    for s = 1, 100 do
      points[#points + 1] = string.format(
        '{"load_id":"%s","lat":32.5,"lng":-96.5,"timestamp":"%s","speed":55.5,"heading":90}',
        load, os.date("!%Y-%m-%dT%H:%M:%SZ", base + s))
    end
  end
  body = '{"points":[' .. table.concat(points, ",") .. ']}'
end
function request()
  return wrk.format("POST", "/v1/tracking/batch", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("WRK_KEY"),
  }, body)
end
