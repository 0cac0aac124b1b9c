-- kvik's part of a script's world, run once when a Lua state is made.
--
-- `bridge` holds what Rust provides; `call` in it is replaced for every
-- script run by a function that reaches the caller's connection. What the
-- scripts see is the `redis` table built here, and the runner returned at
-- the end, which calls a script under an error handler that gives every
-- failure the shape Redis gives it: a table with `err`, and the place in
-- the script it happened at (`source`, `line`).
local bridge = ...
local error, type, tostring, select, xpcall, setmetatable = error, type, tostring, select, xpcall, setmetatable
local rawset, rawget = rawset, rawget

local redis = {}

-- The first frame, from the error outwards, that runs the user's code.
local function place_of(err)
  local source, line = bridge.place()
  if source ~= nil then
    err.source = source
    err.line = line
  end
end

-- A failure raised by `redis.call` from Rust reaches Lua as an opaque
-- value; the table it stands for waits in `bridge.raised`.
local function on_error(err)
  if type(err) == 'userdata' and bridge.raised ~= nil then
    err = bridge.raised
  end
  bridge.raised = nil
  if type(err) ~= 'table' then
    err = { err = 'ERR ' .. tostring(err) }
  end
  if err.source == nil then
    place_of(err)
  end
  return err
end

-- A script's `pcall` gives the text of an error table, not the table
-- (`pcall(redis.call, …)` returns false and "ERR …"), as Redis 7.0's does.
local raw_pcall, raw_xpcall = pcall, xpcall
local function settle(ok, ...)
  if not ok then
    local err = ...
    -- A script being stopped or started over is not an error it may
    -- catch: raised on, past every `pcall`, to the runner.
    if bridge.ending() then
      error(err, 0)
    end
    if type(err) == 'userdata' and bridge.raised ~= nil then
      err = bridge.raised
      bridge.raised = nil
    end
    if type(err) == 'table' and type(err.err) == 'string' then
      err = err.err
    end
    return false, err
  end
  return ok, ...
end

_G.pcall = function(f, ...)
  return settle(raw_pcall(f, ...))
end

local function settle_x(ok, ...)
  if not ok and bridge.ending() then
    error((...), 0)
  end
  return ok, ...
end

-- The handler sees a `redis.call` failure as its error table, as in Redis.
_G.xpcall = function(f, handler)
  local function unwrap(err)
    if type(err) == 'userdata' and bridge.raised ~= nil then
      err = bridge.raised
      bridge.raised = nil
    end
    return handler(err)
  end
  return settle_x(raw_xpcall(f, unwrap))
end

-- `redis.call` and `redis.pcall` are set for each run, by Rust: they are
-- C functions, as in Redis, so a failing call in a `return` still has the
-- script's frame below it to report the line of.

function redis.error_reply(...)
  local msg = ...
  if select('#', ...) ~= 1 or type(msg) ~= 'string' then
    return bridge.error_table('wrong number or type of arguments')
  end
  if msg:sub(1, 1) ~= '-' then
    msg = '-' .. msg
  end
  return bridge.error_table(msg)
end

function redis.status_reply(...)
  local msg = ...
  if select('#', ...) ~= 1 or type(msg) ~= 'string' then
    return bridge.error_table('wrong number or type of arguments')
  end
  return { ok = msg }
end

function redis.sha1hex(...)
  if select('#', ...) ~= 1 then
    error(bridge.error_table('wrong number of arguments'))
  end
  return bridge.sha1hex(tostring((...)))
end

redis.LOG_DEBUG = 0
redis.LOG_VERBOSE = 1
redis.LOG_NOTICE = 2
redis.LOG_WARNING = 3

function redis.log(...)
  local failure = bridge.log(...)
  if failure then
    error(bridge.error_table(failure))
  end
end

redis.REPL_NONE = 0
redis.REPL_AOF = 1
redis.REPL_SLAVE = 2
redis.REPL_REPLICA = 2
redis.REPL_ALL = 3

-- Redis 7.0 replicates a script by its effects only: these are kept for
-- the scripts written for older servers.
function redis.replicate_commands()
  return true
end

redis.set_repl = bridge.set_repl
redis.setresp = bridge.setresp

-- Without the debugger (`SCRIPT DEBUG`), as in Redis.
function redis.breakpoint()
  return false
end

function redis.debug()
end

redis.REDIS_VERSION = bridge.version
redis.REDIS_VERSION_NUM = bridge.version_num

_G.redis = redis

-- Library tables a script cannot change.
local function readonly(t)
  return setmetatable({}, {
    __index = t,
    __newindex = function()
      error('Attempt to modify a readonly table', 2)
    end,
  })
end

rawset(_G, 'bit', readonly(rawget(_G, 'bit')))
rawset(_G, 'cjson', readonly(rawget(_G, 'cjson')))
rawset(_G, 'cmsgpack', readonly(rawget(_G, 'cmsgpack')))
rawset(_G, 'struct', readonly(rawget(_G, 'struct')))

-- Redis 7.0's global protection: reading a global that does not exist,
-- or creating one, is an error, reported at the script's line.
setmetatable(_G, {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = function()
    error('Attempt to modify a readonly table', 2)
  end,
})

return function(script)
  return xpcall(script, on_error)
end
