-- wrk: GET /{ip} over random public-looking IPv4 (80%) and IPv6 (20%) addresses.
-- Requests are built in init(), with a Host header: uWebSockets.js ignores requests without one.
-- Arguments: seed, and optionally an API key sent as a Bearer token.
local paths = {}
function init(args)
  math.randomseed(tonumber(args[1] or "1"))
  local headers = { Host = "127.0.0.1" }
  if args[2] then headers["Authorization"] = "Bearer " .. args[2] end
  for i = 1, 20000 do
    local p
    if math.random() < 0.8 then
      p = string.format("/%d.%d.%d.%d", math.random(1, 223), math.random(0, 255), math.random(0, 255), math.random(0, 255))
    else
      p = string.format("/%x:%x:%x:%x::%x", math.random(0x2001, 0x2c0f), math.random(0, 0xffff), math.random(0, 0xffff), math.random(0, 0xffff), math.random(1, 0xffff))
    end
    paths[i] = wrk.format("GET", p, headers)
  end
end
local n = 0
function request()
  n = n % #paths + 1
  return paths[n]
end
