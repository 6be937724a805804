// `cmsgpack` for scripts: MessagePack as Redis's scripting library encodes and decodes it
// (pack, unpack, unpack_one, unpack_limit), with the same choices: integers in the smallest
// form, non-integers as float32 when exact and float64 otherwise, strings as str (fixstr,
// str8/16/32), a table with keys 1..n as an array and any other as a map, tables nested deeper
// than 16 and values MessagePack has no form for (functions...) as nil; bin and ext types are
// refused on input, as Redis refuses them. Included by shim.h.
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define CAIRN_MSGPACK_MAX_NESTING 16

typedef struct cairn_mp_out {
    unsigned char *bytes;
    size_t length, capacity;
    int failed;
} cairn_mp_out;

static void cairn_mp_put(cairn_mp_out *o, const void *p, size_t n) {
    if (o->failed) return;
    if (o->length + n > o->capacity) {
        size_t want = o->capacity ? o->capacity * 2 : 64;
        while (want < o->length + n) want *= 2;
        unsigned char *grown = (unsigned char *)realloc(o->bytes, want);
        if (grown == NULL) { o->failed = 1; return; }
        o->bytes = grown;
        o->capacity = want;
    }
    memcpy(o->bytes + o->length, p, n);
    o->length += n;
}

/// `tag` then `value` in `width` bytes, big-endian.
static void cairn_mp_tagged(cairn_mp_out *o, unsigned char tag, uint64_t value, int width) {
    unsigned char b[9];
    b[0] = tag;
    for (int i = 0; i < width; i++) b[1 + i] = (unsigned char)(value >> (8 * (width - 1 - i)));
    cairn_mp_put(o, b, (size_t)width + 1);
}

static void cairn_mp_integer(cairn_mp_out *o, int64_t n) {
    unsigned char one;
    if (n >= 0) {
        if (n <= 127) { one = (unsigned char)n; cairn_mp_put(o, &one, 1); }
        else if (n <= 0xff) cairn_mp_tagged(o, 0xcc, (uint64_t)n, 1);
        else if (n <= 0xffff) cairn_mp_tagged(o, 0xcd, (uint64_t)n, 2);
        else if (n <= 0xffffffffLL) cairn_mp_tagged(o, 0xce, (uint64_t)n, 4);
        else cairn_mp_tagged(o, 0xcf, (uint64_t)n, 8);
    } else {
        if (n >= -32) { one = (unsigned char)(int8_t)n; cairn_mp_put(o, &one, 1); }
        else if (n >= -128) cairn_mp_tagged(o, 0xd0, (uint64_t)n & 0xff, 1);
        else if (n >= -32768) cairn_mp_tagged(o, 0xd1, (uint64_t)n & 0xffff, 2);
        else if (n >= -2147483648LL) cairn_mp_tagged(o, 0xd2, (uint64_t)n & 0xffffffffULL, 4);
        else cairn_mp_tagged(o, 0xd3, (uint64_t)n, 8);
    }
}

static void cairn_mp_number(cairn_mp_out *o, lua_Number d) {
    if (!isinf(d) && !isnan(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 && (lua_Number)(int64_t)d == d) {
        cairn_mp_integer(o, (int64_t)d);
        return;
    }
    float f = (float)d;
    if ((double)f == d) {
        uint32_t bits;
        memcpy(&bits, &f, 4);
        cairn_mp_tagged(o, 0xca, bits, 4);
    } else {
        uint64_t bits;
        memcpy(&bits, &d, 8);
        cairn_mp_tagged(o, 0xcb, bits, 8);
    }
}

/// A header for `n` items: fix form below `fixLimit`, then 16- and 32-bit forms.
static void cairn_mp_header(cairn_mp_out *o, size_t n, unsigned char fix, size_t fixLimit,
                            unsigned char tag8, unsigned char tag16, unsigned char tag32) {
    unsigned char one;
    if (n < fixLimit) { one = (unsigned char)(fix | n); cairn_mp_put(o, &one, 1); }
    else if (tag8 != 0 && n <= 0xff) cairn_mp_tagged(o, tag8, n, 1);
    else if (n <= 0xffff) cairn_mp_tagged(o, tag16, n, 2);
    else cairn_mp_tagged(o, tag32, n, 4);
}

/// Whether the table on top has exactly the keys 1..n (n may be 0).
static int cairn_mp_is_array(lua_State *L) {
    lua_Number count = 0, max = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
        lua_pop(L, 1);
        lua_Number k;
        if (lua_type(L, -1) != LUA_TNUMBER || (k = lua_tonumber(L, -1)) <= 0 || floor(k) != k) {
            lua_pop(L, 1);
            return 0;
        }
        if (k > max) max = k;
        count++;
    }
    return max == count;
}

static void cairn_mp_encode(lua_State *L, cairn_mp_out *o, int level);

static void cairn_mp_table(lua_State *L, cairn_mp_out *o, int level) {
    if (cairn_mp_is_array(L)) {
        size_t n = lua_objlen(L, -1);
        cairn_mp_header(o, n, 0x90, 16, 0, 0xdc, 0xdd);
        for (size_t i = 1; i <= n; i++) {
            lua_rawgeti(L, -1, (int)i);
            cairn_mp_encode(L, o, level + 1);
        }
        return;
    }
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) { lua_pop(L, 1); n++; }
    cairn_mp_header(o, n, 0x80, 16, 0, 0xde, 0xdf);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
        lua_pushvalue(L, -2);
        cairn_mp_encode(L, o, level + 1);  // the key's copy
        cairn_mp_encode(L, o, level + 1);  // the value
    }
}

/// Encodes the value on top and pops it.
static void cairn_mp_encode(lua_State *L, cairn_mp_out *o, int level) {
    int t = lua_type(L, -1);
    if (t == LUA_TTABLE && (level >= CAIRN_MSGPACK_MAX_NESTING || !lua_checkstack(L, 4))) t = LUA_TNIL;
    unsigned char one;
    switch (t) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        cairn_mp_header(o, n, 0xa0, 32, 0xd9, 0xda, 0xdb);
        cairn_mp_put(o, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        one = lua_toboolean(L, -1) ? 0xc3 : 0xc2;
        cairn_mp_put(o, &one, 1);
        break;
    case LUA_TNUMBER:
        cairn_mp_number(o, lua_tonumber(L, -1));
        break;
    case LUA_TTABLE:
        cairn_mp_table(L, o, level);
        break;
    default:
        one = 0xc0;
        cairn_mp_put(o, &one, 1);
    }
    lua_pop(L, 1);
}

static int cairn_mp_pack(lua_State *L) {
    int n = lua_gettop(L);
    if (n == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
    if (!lua_checkstack(L, n + 4)) return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
    cairn_mp_out o = {NULL, 0, 0, 0};
    for (int i = 1; i <= n; i++) {
        lua_pushvalue(L, i);
        cairn_mp_encode(L, &o, 0);
    }
    if (o.failed) {
        free(o.bytes);
        return luaL_error(L, "not enough memory");
    }
    lua_pushlstring(L, (const char *)o.bytes, o.length);
    free(o.bytes);
    return 1;
}

// MARK: decoding

typedef struct cairn_mp_in {
    const unsigned char *p;
    size_t left;
    /// 1: the input ended inside a value; 2: a byte no value starts with.
    int error;
} cairn_mp_in;

static int cairn_mp_need(cairn_mp_in *c, size_t n) {
    if (c->left < n) { c->error = 1; return 0; }
    return 1;
}

static uint64_t cairn_mp_read(cairn_mp_in *c, int width) {
    uint64_t v = 0;
    for (int i = 0; i < width; i++) v = (v << 8) | c->p[i];
    c->p += width;
    c->left -= (size_t)width;
    return v;
}

static void cairn_mp_decode(lua_State *L, cairn_mp_in *c);

static void cairn_mp_collection(lua_State *L, cairn_mp_in *c, uint64_t n, int isMap) {
    if (!lua_checkstack(L, 4)) luaL_error(L, "stack overflow (MessagePack input nested too deep)");
    lua_newtable(L);
    for (uint64_t i = 1; i <= n && !c->error; i++) {
        if (isMap) {
            cairn_mp_decode(L, c);
            if (c->error) return;
            cairn_mp_decode(L, c);
            if (c->error) return;
            lua_rawset(L, -3);
        } else {
            cairn_mp_decode(L, c);
            if (c->error) return;
            lua_rawseti(L, -2, (int)i);
        }
    }
}

/// Pushes the next value (nothing once `c->error` is set).
static void cairn_mp_decode(lua_State *L, cairn_mp_in *c) {
    if (!cairn_mp_need(c, 1)) return;
    unsigned char tag = c->p[0];
    c->p++;
    c->left--;
    if (tag <= 0x7f) { lua_pushnumber(L, tag); return; }
    if (tag >= 0xe0) { lua_pushnumber(L, (int8_t)tag); return; }
    if ((tag & 0xe0) == 0xa0 || tag == 0xd9 || tag == 0xda || tag == 0xdb) {
        size_t n;
        if ((tag & 0xe0) == 0xa0) n = tag & 0x1f;
        else {
            int w = tag == 0xd9 ? 1 : tag == 0xda ? 2 : 4;
            if (!cairn_mp_need(c, (size_t)w)) return;
            n = (size_t)cairn_mp_read(c, w);
        }
        if (!cairn_mp_need(c, n)) return;
        lua_pushlstring(L, (const char *)c->p, n);
        c->p += n;
        c->left -= n;
        return;
    }
    if ((tag & 0xf0) == 0x90) { cairn_mp_collection(L, c, tag & 0x0f, 0); return; }
    if ((tag & 0xf0) == 0x80) { cairn_mp_collection(L, c, tag & 0x0f, 1); return; }
    switch (tag) {
    case 0xc0: lua_pushnil(L); return;
    case 0xc2: lua_pushboolean(L, 0); return;
    case 0xc3: lua_pushboolean(L, 1); return;
    case 0xcc: case 0xcd: case 0xce: case 0xcf: {
        int w = 1 << (tag - 0xcc);
        if (!cairn_mp_need(c, (size_t)w)) return;
        lua_pushnumber(L, (lua_Number)cairn_mp_read(c, w));
        return;
    }
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        int w = 1 << (tag - 0xd0);
        if (!cairn_mp_need(c, (size_t)w)) return;
        uint64_t v = cairn_mp_read(c, w);
        int64_t s = w == 1 ? (int8_t)v : w == 2 ? (int16_t)v : w == 4 ? (int32_t)v : (int64_t)v;
        lua_pushnumber(L, (lua_Number)s);
        return;
    }
    case 0xca: {
        if (!cairn_mp_need(c, 4)) return;
        uint32_t bits = (uint32_t)cairn_mp_read(c, 4);
        float f;
        memcpy(&f, &bits, 4);
        lua_pushnumber(L, f);
        return;
    }
    case 0xcb: {
        if (!cairn_mp_need(c, 8)) return;
        uint64_t bits = cairn_mp_read(c, 8);
        double d;
        memcpy(&d, &bits, 8);
        lua_pushnumber(L, d);
        return;
    }
    case 0xdc: case 0xdd: case 0xde: case 0xdf: {
        int w = (tag == 0xdc || tag == 0xde) ? 2 : 4;
        if (!cairn_mp_need(c, (size_t)w)) return;
        cairn_mp_collection(L, c, cairn_mp_read(c, w), tag >= 0xde);
        return;
    }
    default:
        c->error = 2;
    }
}

/// Decodes up to `limit` values (all when both `limit` and `offset` are 0) of the string
/// argument 1 from byte `offset`; unless decoding all, the next offset (-1 at the end) comes
/// first.
static int cairn_mp_unpack_from(lua_State *L, int limit, int offset) {
    size_t length;
    const char *s = luaL_checklstring(L, 1, &length);
    int all = limit == 0 && offset == 0;
    if (offset < 0 || limit < 0) {
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.", offset, limit);
    }
    if ((size_t)offset > length) {
        return luaL_error(L, "Start offset %d greater than input length %d.", offset, (int)length);
    }
    if (all) limit = INT_MAX;
    cairn_mp_in c = {(const unsigned char *)s + offset, length - (size_t)offset, 0};
    int count = 0;
    while (c.left > 0 && count < limit) {
        if (!lua_checkstack(L, 4)) return luaL_error(L, "too many values to unpack");
        cairn_mp_decode(L, &c);
        if (c.error == 1) return luaL_error(L, "Missing bytes in input.");
        if (c.error == 2) return luaL_error(L, "Bad data format in input.");
        count++;
    }
    if (!all) {
        lua_pushnumber(L, c.left == 0 ? -1 : (lua_Number)(length - c.left));
        lua_insert(L, 2);
        count++;
    }
    return count;
}

static int cairn_mp_unpack(lua_State *L) { return cairn_mp_unpack_from(L, 0, 0); }

static int cairn_mp_unpack_one(lua_State *L) {
    int offset = (int)luaL_optinteger(L, 2, 0);
    lua_settop(L, 1);
    return cairn_mp_unpack_from(L, 1, offset);
}

static int cairn_mp_unpack_limit(lua_State *L) {
    int limit = (int)luaL_checkinteger(L, 2);
    int offset = (int)luaL_optinteger(L, 3, 0);
    lua_settop(L, 1);
    return cairn_mp_unpack_from(L, limit, offset);
}

static int cairn_luaopen_cmsgpack(lua_State *L) {
    static const luaL_Reg functions[] = {
        {"pack", cairn_mp_pack},
        {"unpack", cairn_mp_unpack},
        {"unpack_one", cairn_mp_unpack_one},
        {"unpack_limit", cairn_mp_unpack_limit},
        {NULL, NULL},
    };
    lua_newtable(L);
    luaL_register(L, NULL, functions);
    lua_pushstring(L, "cmsgpack");
    lua_setfield(L, -2, "_NAME");
    lua_pushstring(L, "lua-cmsgpack 0.4.0");
    lua_setfield(L, -2, "_VERSION");
    return 1;
}
