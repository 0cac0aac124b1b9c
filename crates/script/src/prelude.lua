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

-- Libraries (FUNCTION LOAD). Their code runs, once per library, in an
-- environment of its own, as Redis 7.0's function engine runs it: while
-- it loads, the only global is a `redis` table that can register
-- functions and log; when its functions run, they see the globals of
-- scripts, but not `KEYS` and `ARGV` (a function gets its keys and
-- arguments as its two parameters). Neither lets a global be created.
local setfenv, pairs, tostring, lower, find = setfenv, pairs, tostring, string.lower, string.find
local G = _G

local function no_global(name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 3)
end

local function readonly_error()
  error('Attempt to modify a readonly table', 2)
end

-- The registrations of the library loading now (nil between loads).
local registered = nil

local function register_error(text)
  error({ err = 'ERR ' .. text })
end

local function is_text(v)
  local t = type(v)
  return t == 'string' or t == 'number'
end

-- A function's flags, as the bits Rust reads (nil for a flag Redis does
-- not know, or a flag that is not text).
local flag_bits = {
  ['no-writes'] = 1,
  ['allow-oom'] = 2,
  ['allow-stale'] = 4,
  ['no-cluster'] = 8,
  ['allow-cross-slot-keys'] = 16,
}

local function read_flags(list)
  local seen = {}
  local j = 1
  while true do
    local flag = list[j]
    if flag == nil then
      break
    end
    if not is_text(flag) then
      return nil
    end
    local bit = flag_bits[lower(tostring(flag))]
    if bit == nil then
      return nil
    end
    seen[bit] = true
    j = j + 1
  end
  local bits = 0
  for bit in pairs(seen) do
    bits = bits + bit
  end
  return bits
end

local function named_registration(t)
  if type(t) ~= 'table' then
    register_error('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
  end
  local r = { flags = 0 }
  for key, value in pairs(t) do
    if not is_text(key) then
      register_error('named argument key given to redis.register_function is not a string')
    end
    key = lower(tostring(key))
    if key == 'function_name' then
      if not is_text(value) then
        register_error('function_name argument given to redis.register_function must be a string')
      end
      r.name = tostring(value)
    elseif key == 'description' then
      if not is_text(value) then
        register_error('description argument given to redis.register_function must be a string')
      end
      r.description = tostring(value)
    elseif key == 'callback' then
      if type(value) ~= 'function' then
        register_error('callback argument given to redis.register_function must be a function')
      end
      r.callback = value
    elseif key == 'flags' then
      if type(value) ~= 'table' then
        register_error('flags argument to redis.register_function must be a table representing function flags')
      end
      r.flags = read_flags(value)
      if r.flags == nil then
        register_error('unknown flag given')
      end
    else
      register_error('unknown argument given to redis.register_function')
    end
  end
  if r.name == nil then
    register_error('redis.register_function must get a function name argument')
  end
  if r.callback == nil then
    register_error('redis.register_function must get a callback argument')
  end
  return r
end

local function register_function(...)
  local n = select('#', ...)
  if registered == nil then
    register_error('redis.register_function can only be called on FUNCTION LOAD command')
  end
  if n < 1 or n > 2 then
    register_error('wrong number of arguments to redis.register_function')
  end
  local r
  if n == 1 then
    r = named_registration(...)
  else
    local name, callback = ...
    if not is_text(name) then
      register_error('first argument to redis.register_function must be a string')
    end
    if type(callback) ~= 'function' then
      register_error('second argument to redis.register_function must be a function')
    end
    r = { name = tostring(name), callback = callback, flags = 0 }
  end
  -- Redis 7.0 words a bad function name as a bad library name.
  if not find(r.name, '^[%w_]+$') then
    register_error('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  for i = 1, #registered do
    if registered[i].name == r.name then
      register_error('Function already exists in the library')
    end
  end
  registered[#registered + 1] = r
end

-- A read-only table whose fields `find` gives, a missing one an error.
local function protected(find)
  return setmetatable({}, {
    __index = function(_, name)
      local v = find(name)
      if v == nil then
        no_global(name)
      end
      return v
    end,
    __newindex = readonly_error,
    __metatable = false,
  })
end

local function fields_of(t)
  return function(name)
    return t[name]
  end
end

local load_api = {
  redis = protected(fields_of({
    register_function = register_function,
    log = redis.log,
    LOG_DEBUG = redis.LOG_DEBUG,
    LOG_VERBOSE = redis.LOG_VERBOSE,
    LOG_NOTICE = redis.LOG_NOTICE,
    LOG_WARNING = redis.LOG_WARNING,
    REDIS_VERSION = redis.REDIS_VERSION,
    REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
  })),
}

local loading = false

local library_env = protected(function(name)
  if loading then
    return load_api[name]
  elseif name ~= 'KEYS' and name ~= 'ARGV' then
    return rawget(G, name)
  end
end)

-- Run a library's compiled code: nil and its registrations, or the text
-- of its failure (`CODE message`).
function bridge.load_library(chunk)
  setfenv(chunk, library_env)
  registered, loading = {}, true
  local ok, err = raw_pcall(chunk)
  local list = registered
  registered, loading = nil, false
  if ok then
    return nil, list
  end
  if type(err) == 'userdata' and bridge.raised ~= nil then
    err = bridge.raised
  end
  bridge.raised = nil
  if type(err) == 'table' and is_text(err.err) then
    return tostring(err.err)
  end
  return 'ERR ' .. tostring(err)
end

-- A script is called with no arguments (it reads KEYS and ARGV); a
-- function with its keys and arguments, handed over in these (xpcall in
-- Lua 5.1 passes none, and a closure per call would be garbage per call).
local next_function, next_keys, next_args

local function call_next()
  local f, keys, args = next_function, next_keys, next_args
  next_function, next_keys, next_args = nil, nil, nil
  return f(keys, args)
end

return function(script, keys, args)
  if keys == nil then
    return xpcall(script, on_error)
  end
  next_function, next_keys, next_args = script, keys, args
  return xpcall(call_next, on_error)
end
