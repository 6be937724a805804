/// The Lua half of the scripting environment, run once when a Lua state is made: Redis's
/// error handler, the `redis` library's pure-Lua functions, and the sandbox.
///
/// Debian's Lua 5.1 has no read-only tables (Redis patches its Lua for them), so the sandbox is
/// built from proxies: the globals table and every library table scripts see are empty
/// tables whose metatables read through to the real ones and refuse writes with Redis's
/// texts ("Attempt to modify a readonly table", "Script attempted to access nonexistent global
/// variable"). `rawset` and `setmetatable` refuse the protected tables; `loadstring` takes text
/// only (no bytecode); `load`, `loadfile`, `dofile`, `print`, `module`, `require`, `os`, `io`,
/// `debug` and `package` are absent. Differences from Redis: `pairs` over a library table
/// (`pairs(string)`) sees nothing, and `getfenv`/`setfenv` remain.
enum LuaSandbox {
    /// Called with the host functions table (`call`, `pcall`, `sha1hex`, `log`, `setresp`) and
    /// returns the error handler scripts run under, the table of real globals (KEYS and ARGV
    /// are stored there), and the library loader (`begin`, `finish`) FUNCTION LOAD runs a
    /// library's code between.
    ///
    /// While a library's code runs, globals read a table holding only `redis` with
    /// `register_function`, `log` and the version and log-level constants (Redis 7.0 gives a
    /// library's load nothing else); the functions it registers run later with the usual
    /// globals. `finish` returns the registrations (`{name, callback, description, flags}`,
    /// flags in Redis's order).
    static let prelude = #"""
    local host = ...
    local G = _G
    local dbg = debug
    local real_rawset, real_setmetatable, real_loadstring = rawset, setmetatable, loadstring
    local type, tostring, error, pairs, ipairs, select = type, tostring, error, pairs, ipairs, select

    -- Redis's __redis__err__handler: every error becomes {err=..., source=..., line=...},
    -- placed at the script's frame (C functions and this prelude's own are skipped).
    local function handler(err)
      local i
      for level = 2, 32 do
        local f = dbg.getinfo(level, 'nSl')
        if not f then break end
        if f.what ~= 'C' and f.source ~= '=cairn' then
          i = f
          break
        end
      end
      if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end
      if i then
        err['source'] = i.source
        err['line'] = i.currentline
      end
      return err
    end

    -- redis.error_reply's prefix rule (Redis's luaPushErrorBuff): "-CODE msg" or "msg" (ERR).
    local function error_table(text)
      if text:sub(1, 1) == '-' then
        local space = text:find(' ', 1, true)
        if space then
          text = text:sub(2, space - 1) .. ' ' .. text:sub(space + 1)
        else
          text = 'ERR ' .. text:sub(2)
        end
      else
        text = 'ERR ' .. text
      end
      return {err = (text:gsub('[\r\n]+$', ''))}
    end

    local redis = {
      call = host.call,
      pcall = host.pcall,
      sha1hex = host.sha1hex,
      log = host.log,
      setresp = host.setresp,
      LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
      REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
      REDIS_VERSION = '7.0.0', REDIS_VERSION_NUM = 0x00070000,
    }
    function redis.error_reply(e)
      if type(e) ~= 'string' and type(e) ~= 'number' then error('wrong number or type of arguments', 0) end
      e = tostring(e)
      if e:sub(1, 1) ~= '-' then e = '-' .. e end
      return error_table(e)
    end
    function redis.status_reply(s)
      if type(s) ~= 'string' and type(s) ~= 'number' then error('wrong number or type of arguments', 0) end
      return {ok = tostring(s)}
    end
    -- Scripts always replicate as effects here (there is nothing to choose): as Redis 7.
    function redis.replicate_commands() return true end
    function redis.set_repl(flags) end
    function redis.breakpoint() return false end
    function redis.debug() end

    local real = {}
    for k, v in pairs(_G) do real[k] = v end
    real.redis = redis
    for _, name in ipairs({'load', 'loadfile', 'dofile', 'print', 'module', 'require', 'debug',
                           'os', 'io', 'package', 'newproxy', 'gcinfo', 'collectgarbage'}) do
      real[name] = nil
    end
    real._G = _G

    local protected = {}
    local function readonly()
      error('Attempt to modify a readonly table', 2)
    end
    local function protect(t)
      local proxy = {}
      real_setmetatable(proxy, {__index = t, __newindex = readonly, __metatable = false})
      protected[proxy] = true
      return proxy
    end
    for _, lib in ipairs({'string', 'table', 'math', 'cjson', 'bit', 'cmsgpack', 'struct', 'redis'}) do
      if real[lib] then real[lib] = protect(real[lib]) end
    end
    real.rawset = function(t, k, v)
      if protected[t] then error('Attempt to modify a readonly table', 0) end
      return real_rawset(t, k, v)
    end
    real.setmetatable = function(t, m)
      if protected[t] then error('Attempt to modify a readonly table', 0) end
      return real_setmetatable(t, m)
    end
    real.loadstring = function(s, name)
      if type(s) == 'string' and s:byte(1) == 27 then return nil, 'loading of binary chunks is not allowed' end
      return real_loadstring(s, name)
    end
    -- The string metatable's __index is the real string library: keep it out of reach.
    getmetatable('').__metatable = false

    -- What globals read: `real`, or the library API while a library loads.
    local lookup = real
    local function missing(k)
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 3)
    end

    -- Empty the globals table itself and make it the proxy of `lookup`.
    local names = {}
    for k in pairs(G) do names[#names + 1] = k end
    for _, k in ipairs(names) do real_rawset(G, k, nil) end
    protected[G] = true
    real_setmetatable(G, {
      __index = function(_, k)
        local v = lookup[k]
        if v == nil then missing(k) end
        return v
      end,
      __newindex = readonly,
      __metatable = false,
    })

    -- FUNCTION LOAD: redis.register_function, with Redis 7.0's checks and texts.
    local registrations
    local function reg_error(text) error({err = 'ERR ' .. text}) end
    local flag_order = {'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}
    local known_flags = {}
    for _, f in ipairs(flag_order) do known_flags[f] = true end
    local function stringlike(v) return type(v) == 'string' or type(v) == 'number' end
    local function register_function(...)
      local n = select('#', ...)
      local name, callback, description
      local flags = {}
      if n == 1 then
        local named = ...
        if type(named) ~= 'table' then
          reg_error('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
        end
        for k, v in pairs(named) do
          if not stringlike(k) then reg_error('named argument key given to redis.register_function is not a string') end
          local key = tostring(k):lower()
          if key == 'function_name' then
            if not stringlike(v) then reg_error('function_name argument given to redis.register_function must be a string') end
            name = tostring(v)
          elseif key == 'description' then
            if not stringlike(v) then reg_error('description argument given to redis.register_function must be a string') end
            description = tostring(v)
          elseif key == 'callback' then
            if type(v) ~= 'function' then reg_error('callback argument given to redis.register_function must be a function') end
            callback = v
          elseif key == 'flags' then
            if type(v) ~= 'table' then reg_error('flags argument to redis.register_function must be a table representing function flags') end
            for _, f in pairs(v) do
              if type(f) ~= 'string' or not known_flags[f] then reg_error('unknown flag given') end
              flags[f] = true
            end
          else
            reg_error('unknown argument given to redis.register_function')
          end
        end
        if name == nil then reg_error('redis.register_function must get a function name argument') end
        if callback == nil then reg_error('redis.register_function must get a callback argument') end
      elseif n == 2 then
        name, callback = ...
        if not stringlike(name) then reg_error('first argument to redis.register_function must be a string') end
        name = tostring(name)
        if type(callback) ~= 'function' then reg_error('second argument to redis.register_function must be a function') end
      else
        reg_error('wrong number of arguments to redis.register_function')
      end
      -- Redis 7.0 checks a function's name with the library name's rule and text.
      if not name:find('^[A-Za-z0-9_]+$') then
        reg_error('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
      end
      for _, r in ipairs(registrations) do
        if r.name == name then reg_error('Function already exists in the library') end
      end
      local ordered = {}
      for _, f in ipairs(flag_order) do
        if flags[f] then ordered[#ordered + 1] = f end
      end
      registrations[#registrations + 1] = {name = name, callback = callback, description = description, flags = ordered}
    end

    local function api(t)
      local proxy = {}
      real_setmetatable(proxy, {
        __index = function(_, k)
          local v = t[k]
          if v == nil then missing(k) end
          return v
        end,
        __newindex = readonly,
        __metatable = false,
      })
      protected[proxy] = true
      return proxy
    end
    local library_api = {
      redis = api({
        register_function = register_function,
        log = host.log,
        LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
        REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
      }),
    }

    -- A library's code runs between begin and finish (called from Swift, so a timeout raised
    -- by the hook never lands in this prelude's code): finish returns the registrations.
    local library_loader = {
      begin = function()
        registrations = {}
        lookup = library_api
      end,
      finish = function()
        lookup = real
        local found = registrations
        registrations = nil
        return found
      end,
    }
    return handler, real, library_loader
    """#
}
