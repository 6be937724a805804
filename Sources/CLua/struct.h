// `struct` for scripts: pack, unpack and size of binary records by a format string, as the
// library Redis's scripting bundles reads it:
//   > < (big / little endian)  !n (align to n, default 8)  space (ignored)
//   b B h H l L T i[n] I[n] (signed/unsigned integers; n bytes, at most 32)  f d (float, double)
//   x (one zero byte)  s (zero-terminated string)  c[n] (n bytes; c0: the length is the
//   previous number unpacked, or the whole string when packing).
// unpack(fmt, data [, position]) returns the values then the next position (1-based).
// Included by shim.h.
#include <ctype.h>
#include <limits.h>
#include <string.h>

#define CAIRN_STRUCT_MAX_INT 32
#define CAIRN_STRUCT_MAX_ALIGN 8

typedef struct cairn_struct_header {
    int big;    // 1: big-endian
    int align;
} cairn_struct_header;

static int cairn_struct_number(lua_State *L, const char **fmt, int fallback) {
    if (!isdigit((unsigned char)**fmt)) return fallback;
    int n = 0;
    while (isdigit((unsigned char)**fmt)) {
        int digit = **fmt - '0';
        if (n > (INT_MAX - digit) / 10) luaL_error(L, "integral size overflow");
        n = n * 10 + digit;
        (*fmt)++;
    }
    return n;
}

/// The size of option `opt` (reading its count from `fmt`); 0 for options without one.
static size_t cairn_struct_size_of(lua_State *L, int opt, const char **fmt) {
    switch (opt) {
    case 'b': case 'B': return sizeof(char);
    case 'h': case 'H': return sizeof(short);
    case 'l': case 'L': return sizeof(long);
    case 'T': return sizeof(size_t);
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    case 'x': return 1;
    case 'c': return (size_t)cairn_struct_number(L, fmt, 1);
    case 'i': case 'I': {
        int n = cairn_struct_number(L, fmt, sizeof(int));
        if (n > CAIRN_STRUCT_MAX_INT) luaL_error(L, "integral size %d is larger than limit of %d", n, CAIRN_STRUCT_MAX_INT);
        return (size_t)n;
    }
    default: return 0;
    }
}

/// Zero bytes to put before an item of `size` at `position`.
static size_t cairn_struct_padding(size_t position, const cairn_struct_header *h, int opt, size_t size) {
    if (size == 0 || opt == 'c') return 0;
    if (size > (size_t)h->align) size = (size_t)h->align;
    return (size - (position & (size - 1))) & (size - 1);
}

/// Endianness and alignment options; any other option is an error.
static void cairn_struct_control(lua_State *L, int opt, const char **fmt, cairn_struct_header *h) {
    switch (opt) {
    case ' ': return;
    case '>': h->big = 1; return;
    case '<': h->big = 0; return;
    case '!': {
        int a = cairn_struct_number(L, fmt, CAIRN_STRUCT_MAX_ALIGN);
        if (a <= 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", a);
        h->align = a;
        return;
    }
    default:
        luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
    }
}

static int cairn_struct_is_integer(int opt) { return strchr("bBhHlLTiI", opt) != NULL; }

/// Native byte order is little-endian on every platform Cairn builds for; `big` reverses.
static void cairn_struct_order(unsigned char *bytes, size_t n, int big) {
    if (!big) return;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned char t = bytes[i];
        bytes[i] = bytes[n - 1 - i];
        bytes[n - 1 - i] = t;
    }
}

static int cairn_struct_pack(lua_State *L) {
    const char *fmt = luaL_checkstring(L, 1);
    cairn_struct_header h = {0, 1};
    int arg = 2;
    size_t total = 0;
    luaL_Buffer b;
    lua_pushnil(L);  // keeps the arguments apart from the buffer's stack use
    luaL_buffinit(L, &b);
    while (*fmt != '\0') {
        int opt = *fmt++;
        size_t size = cairn_struct_size_of(L, opt, &fmt);
        size_t pad = cairn_struct_padding(total, &h, opt, size);
        total += pad;
        while (pad-- > 0) luaL_addchar(&b, '\0');
        if (cairn_struct_is_integer(opt)) {
            lua_Number n = luaL_checknumber(L, arg++);
            unsigned long long v = n < 0 ? (unsigned long long)(long long)n : (unsigned long long)n;
            unsigned char bytes[CAIRN_STRUCT_MAX_INT];
            for (size_t i = 0; i < size; i++) {
                bytes[h.big ? size - 1 - i : i] = (unsigned char)(v & 0xff);
                v = i < 7 ? v >> 8 : 0;
            }
            luaL_addlstring(&b, (const char *)bytes, size);
        } else if (opt == 'x') {
            luaL_addchar(&b, '\0');
        } else if (opt == 'f') {
            float f = (float)luaL_checknumber(L, arg++);
            cairn_struct_order((unsigned char *)&f, sizeof f, h.big);
            luaL_addlstring(&b, (const char *)&f, sizeof f);
        } else if (opt == 'd') {
            double d = luaL_checknumber(L, arg++);
            cairn_struct_order((unsigned char *)&d, sizeof d, h.big);
            luaL_addlstring(&b, (const char *)&d, sizeof d);
        } else if (opt == 'c' || opt == 's') {
            size_t length;
            const char *s = luaL_checklstring(L, arg++, &length);
            if (size == 0) size = length;
            luaL_argcheck(L, length >= size, arg, "string too short");
            luaL_addlstring(&b, s, size);
            if (opt == 's') {
                luaL_addchar(&b, '\0');
                size++;
            }
        } else {
            cairn_struct_control(L, opt, &fmt, &h);
        }
        total += size;
    }
    luaL_pushresult(&b);
    return 1;
}

static lua_Number cairn_struct_integer(const unsigned char *p, size_t size, int big, int isSigned) {
    unsigned long long v = 0;
    for (size_t k = 0; k < size; k++) {
        size_t i = big ? k : size - 1 - k;
        v = (v << 8) | p[i];
    }
    if (!isSigned) return (lua_Number)v;
    if (size < sizeof v) {
        unsigned long long sign = 1ULL << (size * 8 - 1);
        if (v & sign) v |= ~0ULL << (size * 8);
    }
    return (lua_Number)(long long)v;
}

static int cairn_struct_unpack(lua_State *L) {
    const char *fmt = luaL_checkstring(L, 1);
    size_t length;
    const unsigned char *data = (const unsigned char *)luaL_checklstring(L, 2, &length);
    lua_Integer start = luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, start > 0, 3, "offset must be 1 or greater");
    size_t position = (size_t)start - 1;
    cairn_struct_header h = {0, 1};
    int n = 0;
    while (*fmt != '\0') {
        int opt = *fmt++;
        size_t size = cairn_struct_size_of(L, opt, &fmt);
        position += cairn_struct_padding(position, &h, opt, size);
        luaL_argcheck(L, size <= length && position <= length - size, 2, "data string too short");
        luaL_checkstack(L, 2, "too many results");
        if (cairn_struct_is_integer(opt)) {
            lua_pushnumber(L, cairn_struct_integer(data + position, size, h.big, islower(opt)));
            n++;
        } else if (opt == 'x') {
        } else if (opt == 'f') {
            float f;
            memcpy(&f, data + position, sizeof f);
            cairn_struct_order((unsigned char *)&f, sizeof f, h.big);
            lua_pushnumber(L, f);
            n++;
        } else if (opt == 'd') {
            double d;
            memcpy(&d, data + position, sizeof d);
            cairn_struct_order((unsigned char *)&d, sizeof d, h.big);
            lua_pushnumber(L, d);
            n++;
        } else if (opt == 'c') {
            if (size == 0) {
                if (n == 0 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
                lua_Number previous = lua_tonumber(L, -1);
                size = previous < 0 ? 0 : (size_t)previous;
                lua_pop(L, 1);
                n--;
                luaL_argcheck(L, size <= length && position <= length - size, 2, "data string too short");
            }
            lua_pushlstring(L, (const char *)data + position, size);
            n++;
        } else if (opt == 's') {
            const unsigned char *end = (const unsigned char *)memchr(data + position, '\0', length - position);
            if (end == NULL) luaL_error(L, "unfinished string in data");
            size = (size_t)(end - (data + position)) + 1;
            lua_pushlstring(L, (const char *)data + position, size - 1);
            n++;
        } else {
            cairn_struct_control(L, opt, &fmt, &h);
        }
        position += size;
    }
    lua_pushnumber(L, (lua_Number)(position + 1));
    return n + 1;
}

static int cairn_struct_size(lua_State *L) {
    const char *fmt = luaL_checkstring(L, 1);
    cairn_struct_header h = {0, 1};
    size_t position = 0;
    while (*fmt != '\0') {
        int opt = *fmt++;
        size_t size = cairn_struct_size_of(L, opt, &fmt);
        position += cairn_struct_padding(position, &h, opt, size);
        if (opt == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
        if (opt == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
        if (!cairn_struct_is_integer(opt) && strchr("xfdc", opt) == NULL) cairn_struct_control(L, opt, &fmt, &h);
        position += size;
    }
    lua_pushnumber(L, (lua_Number)position);
    return 1;
}

static int cairn_luaopen_struct(lua_State *L) {
    static const luaL_Reg functions[] = {
        {"pack", cairn_struct_pack},
        {"unpack", cairn_struct_unpack},
        {"size", cairn_struct_size},
        {NULL, NULL},
    };
    lua_newtable(L);
    luaL_register(L, NULL, functions);
    return 1;
}
