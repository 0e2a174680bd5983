local out = {}
for _, fmt in ipairs(redis.call('SMEMBERS', Q .. ':fmts')) do
  out[#out + 1] = fmt
  out[#out + 1] = redis.call('ZCARD', Q .. ':w:' .. fmt)
end
return out
