-- wrk: POST /batch with 1000 random addresses per request (32 prebuilt bodies, rotated).
local reqs = {}
function init(args)
  math.randomseed(tonumber(args[1] or "1"))
  for b = 1, 32 do
    local ips = {}
    for i = 1, 1000 do
      if math.random() < 0.8 then
        ips[i] = string.format('"%d.%d.%d.%d"', math.random(1, 223), math.random(0, 255), math.random(0, 255), math.random(0, 255))
      else
        ips[i] = string.format('"%x:%x:%x:%x::%x"', math.random(0x2001, 0x2c0f), math.random(0, 0xffff), math.random(0, 0xffff), math.random(0, 0xffff), math.random(1, 0xffff))
      end
    end
    local body = '{"ips":[' .. table.concat(ips, ",") .. ']}'
    reqs[b] = wrk.format("POST", "/batch", { Host = "127.0.0.1", ["Content-Type"] = "application/json" }, body)
  end
end
local n = 0
function request()
  n = n % #reqs + 1
  return reqs[n]
end
