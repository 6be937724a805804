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
    /// returns the error handler scripts run under and the table of real globals (KEYS and
    /// ARGV are stored there).
    static let prelude = #"""
    local host = ...
    local G = _G
    local dbg = debug
    local real_rawset, real_setmetatable, real_loadstring = rawset, setmetatable, loadstring
    local type, tostring, error = type, tostring, error

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
    for _, lib in ipairs({'string', 'table', 'math', 'cjson', 'bit', 'redis'}) do
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

    -- Empty the globals table itself and make it the proxy of `real`.
    local names = {}
    for k in pairs(G) do names[#names + 1] = k end
    for _, k in ipairs(names) do real_rawset(G, k, nil) end
    protected[G] = true
    real_setmetatable(G, {
      __index = function(_, k)
        local v = real[k]
        if v == nil then
          error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
        end
        return v
      end,
      __newindex = readonly,
      __metatable = false,
    })
    return handler, real
    """#
}
