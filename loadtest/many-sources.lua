-- wrk: keyless GET /{ip} from many clients, as a public service sees them behind its proxy:
-- each request carries X-Forwarded-For, one of `sources` addresses (default 20 000), so the
-- server counts each source's rate and daily cap (TRUSTED_PROXIES must hold 127.0.0.1).
-- Arguments: seed, and optionally the number of sources (in the place of kit.wrk's key).
local reqs = {}
function init(args)
  math.randomseed(tonumber(args[1] or "1"))
  local sources = tonumber(args[2] or "20000")
  for i = 1, 50000 do
    local s = math.random(0, sources - 1)
    local from = string.format("100.%d.%d.%d", 64 + math.floor(s / 65536), math.floor(s / 256) % 256, s % 256)
    local p = string.format("/%d.%d.%d.%d", math.random(1, 223), math.random(0, 255), math.random(0, 255), math.random(0, 255))
    reqs[i] = wrk.format("GET", p, { Host = "127.0.0.1", ["X-Forwarded-For"] = from })
  end
end
local n = 0
function request()
  n = n % #reqs + 1
  return reqs[n]
end
