-- Helpers of the lobby scripts. `KEYS[1]` is the mode's slot, `P:{lb:F}`.
local L = KEYS[1]
local function rkey(id) return L .. ':room:' .. id end
local function all_taken(seats)
  for _, s in ipairs(seats) do if s.kind == 'open' then return false end end
  return true
end
