-- wrk: GET a load's latest position, round-robin over the loads listed in the
-- file named by $WRK_LOADS.

local loads = {}
local counter = 0

function init(args)
  for line in io.lines(os.getenv("WRK_LOADS")) do
    if line ~= "" then loads[#loads + 1] = line end
  end
end

function request()
  counter = counter + 1
  local load = loads[(counter % #loads) + 1]
  return wrk.format("GET", "/v1/loads/" .. load .. "/tracking", {
    ["Authorization"] = "Bearer " .. os.getenv("WRK_KEY"),
  })
end
