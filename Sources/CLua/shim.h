// Lua 5.1 for Cairn's scripting (Debian's lua5.1 source with Cairn's patch, built by
// scripts/lib/native.sh), plus Debian's cjson and bit modules (lua-cjson-dev, lua-bitop-dev) and
// Cairn's own cmsgpack and struct (cmsgpack.h, struct.h: Debian has no Lua 5.1 packages of them). Lua's C API is partly macros Swift cannot import; the static
// inline wrappers below stand in for them. The allocator with a byte budget, the kill hook and
// the trampoline that raises errors for Swift callbacks live here too: lua_error longjmps, and
// a longjmp must never cross a Swift frame.
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

extern int luaopen_cjson(lua_State *L);
extern int luaopen_bit(lua_State *L);

#include "cmsgpack.h"
#include "struct.h"

/// What one Lua state may use and whether its running script must stop. Read by the allocator
/// and the hook (C), written by Swift: `killRequested` from another thread (SCRIPT KILL).
typedef struct cairn_lua_budget {
    size_t used;
    /// 0: no limit. Enforced only while Lua code runs, not inside Swift callbacks (`inHost`),
    /// so an allocation failure never longjmps through Swift.
    size_t limit;
    int inHost;
    volatile int killRequested;
    /// Set when the allocator refused a block (the script ran out of its budget).
    int overBudget;
    /// CLOCK_MONOTONIC milliseconds after which the running code fails with
    /// CAIRN_TIMEOUT_MESSAGE (a library's load, FUNCTION LOAD); 0: none.
    long long deadlineMillis;
} cairn_lua_budget;

static inline long long cairn_lua_monotonic_millis(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *cairn_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    cairn_lua_budget *b = (cairn_lua_budget *)ud;
    if (nsize == 0) {
        b->used -= osize;
        free(ptr);
        return NULL;
    }
    if (b->limit > 0 && !b->inHost && nsize > osize && b->used + (nsize - osize) > b->limit) {
        b->overBudget = 1;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p != NULL) b->used = b->used - osize + nsize;
    return p;
}

static inline lua_State *cairn_lua_newstate(cairn_lua_budget *budget) {
    return lua_newstate(cairn_lua_alloc, budget);
}

static inline cairn_lua_budget *cairn_lua_budget_of(lua_State *L) {
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return (cairn_lua_budget *)ud;
}

/// The message a killed script fails with (Redis's text).
#define CAIRN_KILLED_MESSAGE "ERR Script killed by user with SCRIPT KILL..."

/// The message a library's code fails with when its load runs past its deadline (Redis's text).
#define CAIRN_TIMEOUT_MESSAGE "ERR FUNCTION LOAD timeout"

/// Counted-instruction hook: ends the script once SCRIPT KILL asked, or a library's load once
/// it ran past its deadline (a table, as redis.call's errors are, so pcall in the script cannot
/// swallow it silently either way: the hook fires again on the next count).
static void cairn_lua_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    cairn_lua_budget *b = cairn_lua_budget_of(L);
    const char *message = NULL;
    if (b->killRequested) {
        message = CAIRN_KILLED_MESSAGE;
    } else if (b->deadlineMillis != 0 && cairn_lua_monotonic_millis() >= b->deadlineMillis) {
        message = CAIRN_TIMEOUT_MESSAGE;
    }
    if (message != NULL) {
        lua_sethook(L, cairn_lua_hook, LUA_MASKLINE | LUA_MASKCOUNT, 1);
        lua_newtable(L);
        lua_pushstring(L, "err");
        lua_pushstring(L, message);
        lua_rawset(L, -3);
        lua_error(L);
    }
}

static inline void cairn_lua_install_hook(lua_State *L, int every) {
    lua_sethook(L, cairn_lua_hook, LUA_MASKCOUNT, every);
}

/// A Swift callback: returns how many results it pushed, or -1 after pushing an error value
/// for the trampoline to raise.
typedef int (*cairn_lua_host_fn)(lua_State *L);

static int cairn_lua_trampoline(lua_State *L) {
    cairn_lua_host_fn f = (cairn_lua_host_fn)lua_touserdata(L, lua_upvalueindex(1));
    cairn_lua_budget *b = cairn_lua_budget_of(L);
    b->inHost++;
    int n = f(L);
    b->inHost--;
    if (n < 0) return lua_error(L);
    return n;
}

/// Pushes `f` as a Lua function that may fail (through the trampoline).
static inline void cairn_lua_push_host(lua_State *L, cairn_lua_host_fn f) {
    lua_pushlightuserdata(L, (void *)f);
    lua_pushcclosure(L, cairn_lua_trampoline, 1);
}

/// Opens one library (they must be called through Lua, not directly) and makes it the global
/// `name` (Debian's cjson returns its table without setting a global).
static inline void cairn_lua_open(lua_State *L, lua_CFunction open, const char *name) {
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (name[0] != '\0' && lua_istable(L, -1)) {
        lua_setglobal(L, name);
    } else {
        lua_pop(L, 1);
    }
}

static inline void cairn_lua_open_standard(lua_State *L) {
    cairn_lua_open(L, luaopen_base, "");
    cairn_lua_open(L, luaopen_table, LUA_TABLIBNAME);
    cairn_lua_open(L, luaopen_string, LUA_STRLIBNAME);
    cairn_lua_open(L, luaopen_math, LUA_MATHLIBNAME);
    cairn_lua_open(L, luaopen_debug, LUA_DBLIBNAME);
    cairn_lua_open(L, luaopen_cjson, "cjson");
    cairn_lua_open(L, luaopen_bit, "bit");
    cairn_lua_open(L, cairn_luaopen_cmsgpack, "cmsgpack");
    cairn_lua_open(L, cairn_luaopen_struct, "struct");
}

// Macros of lua.h as functions.
static inline void cairn_lua_pop(lua_State *L, int n) { lua_pop(L, n); }
static inline void cairn_lua_newtable(lua_State *L) { lua_newtable(L); }
static inline int cairn_lua_isnil(lua_State *L, int i) { return lua_isnil(L, i); }
static inline void cairn_lua_getglobal(lua_State *L, const char *name) { lua_getglobal(L, name); }
static inline void cairn_lua_setglobal(lua_State *L, const char *name) { lua_setglobal(L, name); }
static inline int cairn_lua_upvalueindex(int i) { return lua_upvalueindex(i); }
static inline int cairn_lua_registryindex(void) { return LUA_REGISTRYINDEX; }
static inline int cairn_lua_globalsindex(void) { return LUA_GLOBALSINDEX; }
