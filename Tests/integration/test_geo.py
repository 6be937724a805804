"""Geo commands against the real cairnd and a real redis-server 7.0, side by side: the same
requests go to both and the raw replies (RESP2 and RESP3, read byte-exact) must be equal.

The data set is a few hundred points: real cities, points at the Mercator limits (latitude
±85.05112878), on and around the antimeridian, a dense cluster around Paris (so COUNT has
neighbours to choose from), and pseudo-random points from a fixed seed. Compared: GEOADD's
replies and the 52-bit scores it stores (ZRANGE WITHSCORES), GEOHASH, GEOPOS, GEODIST, every
search form with the options Cairn supports, the STORE forms' results, error texts, MULTI/EXEC
and EVAL. Where Redis does not order a reply (a search without ASC, DESC or COUNT) the members
are compared as sets; otherwise in order.
"""
import itertools
import random
import socket
import time

import pytest

from conftest import REDIS_SERVER, Cairnd, resp_command

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


class Error(str):
    """An error reply's text."""

    def __repr__(self):
        return f"Error({str.__repr__(self)})"


class Double(bytes):
    """A RESP3 double, kept as its text."""

    def __repr__(self):
        return f"Double({bytes.__repr__(self)})"


class NullArray:
    def __eq__(self, other):
        return isinstance(other, NullArray)

    def __hash__(self):
        return 0

    def __repr__(self):
        return "NullArray"


class Null:
    """RESP3's `_`."""

    def __eq__(self, other):
        return isinstance(other, Null)

    def __hash__(self):
        return 1

    def __repr__(self):
        return "Null"


class Raw:
    """One connection that keeps every reply as it came: RESP2, or RESP3 after HELLO 3."""

    def __init__(self, port, protocol=2):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.file = self.sock.makefile("rb")
        if protocol == 3:
            assert isinstance(self.call("HELLO", "3"), dict)

    def read(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return Error(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b",":
            return Double(rest)
        if kind == b"_":
            return Null()
        if kind == b"#":
            return rest == b"t"
        if kind in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return None
            return self.file.read(n + 2)[:-2]
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return NullArray()
            return [self.read() for _ in range(n)]
        if kind == b"%":
            n = int(rest)
            return {self.read(): self.read() for _ in range(n)}
        raise AssertionError(f"unexpected reply line {line!r}")

    def call(self, *argv):
        self.sock.sendall(resp_command(*argv))
        return self.read()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(resp_command(*c) for c in commands))
        return [self.read() for _ in commands]

    def close(self):
        self.file.close()
        self.sock.close()


CITIES = [
    ("Paris", 2.3522219, 48.856614), ("London", -0.1277583, 51.5073509), ("Berlin", 13.404954, 52.5200066),
    ("Madrid", -3.7037902, 40.4167754), ("Rome", 12.4963655, 41.9027835), ("Palermo", 13.361389, 38.115556),
    ("Catania", 15.087269, 37.502669), ("Reykjavik", -21.9426354, 64.146582), ("Oslo", 10.7522454, 59.9138688),
    ("Helsinki", 24.9383791, 60.1698557), ("Moscow", 37.6172999, 55.755826), ("Istanbul", 28.9783589, 41.0082376),
    ("Cairo", 31.2357116, 30.0444196), ("Lagos", 3.3792057, 6.5243793), ("Nairobi", 36.8219462, -1.2920659),
    ("Cape Town", 18.4240553, -33.9248685), ("Dubai", 55.2707828, 25.2048493), ("Mumbai", 72.8776559, 19.0759837),
    ("Delhi", 77.1024902, 28.7040592), ("Bangkok", 100.5017651, 13.7563309), ("Singapore", 103.819836, 1.352083),
    ("Jakarta", 106.845599, -6.2087634), ("Beijing", 116.4073963, 39.9041999), ("Shanghai", 121.4737021, 31.2303904),
    ("Tokyo", 139.6917064, 35.6894875), ("Seoul", 126.9779692, 37.566535), ("Manila", 120.9842195, 14.5995124),
    ("Sydney", 151.2092955, -33.8688197), ("Melbourne", 144.9630576, -37.8136276), ("Perth", 115.8604572, -31.9505269),
    ("Auckland", 174.7633315, -36.8484597), ("Wellington", 174.776236, -41.2864603), ("Suva", 178.4419, -18.1416),
    ("Apia", -171.7513551, -13.8506958), ("Nuku'alofa", -175.2018, -21.1394), ("Honolulu", -157.8583333, 21.3069444),
    ("Anchorage", -149.9002778, 61.2180556), ("Petropavlovsk", 158.6509, 53.0167), ("Anadyr", 177.5089, 64.7337),
    ("Nome", -165.4064, 64.5011), ("Vancouver", -123.1207375, 49.2827291), ("San Francisco", -122.4194155, 37.7749295),
    ("Los Angeles", -118.2436849, 34.0522342), ("Denver", -104.990251, 39.7392358), ("Chicago", -87.6297982, 41.8781136),
    ("New York", -74.0059728, 40.7127753), ("Toronto", -79.3831843, 43.653226), ("Mexico City", -99.133208, 19.4326077),
    ("Bogota", -74.072092, 4.7109886), ("Lima", -77.042793, -12.0463731), ("Santiago", -70.6692655, -33.4488897),
    ("Buenos Aires", -58.3815591, -34.6036844), ("Sao Paulo", -46.6333094, -23.5505199), ("Ushuaia", -68.3029511, -54.8019121),
    ("Longyearbyen", 15.6356, 78.2232), ("Alert", -62.3481, 82.5018), ("Nuuk", -51.721589, 64.18141),
    ("McMurdo", 166.6863, -77.8419), ("Amundsen-Scott", 0.0, -85.05112878), ("Quito", -78.4678382, -0.1806532),
]

EDGES = [
    ("east-edge", 180, 0), ("west-edge", -180, 0), ("north-limit", 0, 85.05112878), ("south-limit", 0, -85.05112878),
    ("ne-corner", 180, 85.05112878), ("sw-corner", -180, -85.05112878), ("nw-corner", -180, 85.05112878),
    ("se-corner", 180, -85.05112878), ("null-island", 0, 0), ("east-of-line", 179.9999, 10),
    ("west-of-line", -179.9999, 10), ("near-north", 45.5, 85.05), ("near-south", -120.25, -85.0511),
    ("tiny-east", 1e-9, -1e-9), ("dateline-a", 179.99, -16.5), ("dateline-b", -179.99, -16.5),
]


def points():
    rng = random.Random(39)
    out = [(f"city:{n}", lon, lat) for n, lon, lat in CITIES] + [(f"edge:{n}", lon, lat) for n, lon, lat in EDGES]
    for i in range(40):  # within ~20 km of Paris
        out.append((f"paris:{i}", 2.3522219 + rng.uniform(-0.25, 0.25), 48.856614 + rng.uniform(-0.18, 0.18)))
    for i in range(20):  # around the antimeridian near Fiji
        lon = rng.uniform(177, 183)
        out.append((f"fiji:{i}", lon - 360 if lon > 180 else lon, rng.uniform(-20, -14)))
    for i in range(220):
        out.append((f"rand:{i}", rng.uniform(-180, 180), rng.uniform(-85.05112878, 85.05112878)))
    return out


POINTS = points()
NAMES = [name for name, _, _ in POINTS]
WITHS = ["WITHCOORD", "WITHDIST", "WITHHASH"]


@pytest.fixture(scope="module")
def conns(servers):
    """(cairn, redis) connection pairs for RESP2 and RESP3, both servers loaded with POINTS."""
    cairn, reference = servers
    pairs = {p: (Raw(cairn.port, p), Raw(reference.port, p)) for p in (2, 3)}
    c, r = pairs[2]
    loads = [("FLUSHALL",)]
    for i in range(0, len(POINTS), 50):
        loads.append(("GEOADD", "pts", *[str(x) for p in POINTS[i:i + 50] for x in (p[1], p[2], p[0])]))
    got, want = c.pipeline(loads), r.pipeline(loads)
    assert got == want
    assert sum(want[1:]) == len(POINTS)
    yield pairs
    for a, b in pairs.values():
        a.close()
        b.close()


def both(pair, *argv):
    """The reply of each server to one request."""
    c, r = pair
    return c.call(*argv), r.call(*argv)


def same(pair, *argv):
    got, want = both(pair, *argv)
    assert got == want, argv
    return want


def as_set(reply):
    return sorted(reply, key=repr) if isinstance(reply, list) else reply


def test_scores_are_redis_52_bit_geohashes(conns):
    for p in (2, 3):
        same(conns[p], "ZRANGE", "pts", "0", "-1", "WITHSCORES")
    want = same(conns[2], "ZCARD", "pts")
    assert want == len(POINTS)
    # One known value: Redis's documentation's Palermo.
    assert same(conns[2], "ZSCORE", "pts", "city:Palermo") == b"3479099956230698"


def test_geohash_geopos_geodist(conns):
    members = NAMES + ["missing"]
    for p in (2, 3):
        pair = conns[p]
        for i in range(0, len(members), 60):
            same(pair, "GEOHASH", "pts", *members[i:i + 60])
            same(pair, "GEOPOS", "pts", *members[i:i + 60])
        same(pair, "GEOHASH", "pts")
        same(pair, "GEOPOS", "pts")
        same(pair, "GEOHASH", "nokey", "a", "b")
        same(pair, "GEOPOS", "nokey", "a", "b")
        rng = random.Random(p)
        for _ in range(150):
            a, b = rng.choice(members), rng.choice(members)
            unit = rng.choice([(), ("m",), ("KM",), ("ft",), ("Mi",)])
            same(pair, "GEODIST", "pts", a, b, *unit)
        same(pair, "GEODIST", "pts", "city:Paris", "city:Paris")
        same(pair, "GEODIST", "nokey", "a", "b")
        same(pair, "GEODIST", "nokey", "a", "b", "parsecs")
        same(pair, "GEODIST", "pts", "city:Paris", "city:Rome", "parsecs")
        same(pair, "GEODIST", "pts", "city:Paris", "city:Rome", "km", "extra")
    assert same(conns[2], "GEOHASH", "pts", "city:Palermo") == [b"sqc8b49rny0"]
    assert same(conns[2], "GEODIST", "pts", "city:Palermo", "city:Catania") == b"166274.1516"


def test_scores_no_geoadd_wrote_decode_as_in_redis(conns):
    pair = conns[2]
    same(pair, "ZADD", "odd", "-1", "neg", "0", "zero", "4503599627370496", "2^52", "9007199254740992", "2^53",
         "1e20", "huge", "1.5", "fraction", "inf", "inf")
    for p in (2, 3):
        same(conns[p], "GEOPOS", "odd", "neg", "zero", "2^52", "2^53", "huge", "fraction", "inf")
        same(conns[p], "GEOHASH", "odd", "neg", "zero", "2^52", "2^53", "huge", "fraction", "inf")
        same(conns[p], "GEODIST", "odd", "zero", "2^52", "km")
        same(conns[p], "GEOSEARCH", "odd", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "ASC", "WITHCOORD", "WITHHASH")
    same(pair, "DEL", "odd")


def test_geoadd_options_and_errors(conns):
    pair = conns[2]
    steps = [
        ("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
        ("GEOADD", "g", "NX", "13.4", "38.1", "Palermo", "2.35", "48.85", "Paris"),
        ("GEOADD", "g", "XX", "13.4", "38.1", "Palermo", "-0.12", "51.5", "London"),
        ("GEOADD", "g", "XX", "CH", "13.5", "38.2", "Palermo", "-0.12", "51.5", "London"),
        ("GEOADD", "g", "CH", "13.5", "38.2", "Palermo", "15.087269", "37.502669", "Catania", "1", "1", "One"),
        ("GEOADD", "g", "CH", "NX", "13.6", "38.3", "Palermo", "2", "2", "Two"),
        ("GEOADD", "g", "ch", "xx", "13.6", "38.3", "Palermo"),
        ("ZRANGE", "g", "0", "-1", "WITHSCORES"),
        # A member named twice: the triples apply one by one.
        ("GEOADD", "dup", "1", "1", "m", "2", "2", "m"),
        ("GEOADD", "dup", "NX", "3", "3", "n", "4", "4", "n", "5", "5", "m"),
        ("GEOADD", "dup", "CH", "6", "6", "o", "7", "7", "o", "2", "2", "m", "1", "1", "m"),
        ("GEOADD", "dup", "XX", "CH", "8", "8", "p", "9", "9", "p", "1", "1", "m", "1", "1", "m"),
        ("GEOADD", "dup", "XX", "CH", "3", "3", "n", "3", "3", "n", "4", "4", "n"),
        ("GEOADD", "dup", "NX", "CH", "3", "3", "q", "3", "3", "q"),
        ("GEOADD", "dup2", "XX", "1", "1", "a", "1", "1", "a"),
        ("ZRANGE", "dup", "0", "-1", "WITHSCORES"),
        ("EXISTS", "dup2"),
        ("GEOADD", "missing", "XX", "1", "1", "a"),
        ("EXISTS", "missing"),
        # Errors: options, arity, coordinates (the first invalid pair stops the whole request).
        ("GEOADD", "g", "NX", "XX", "1", "1", "a"),
        ("GEOADD", "g", "GT", "1", "1", "a"),
        ("GEOADD", "g", "1", "1", "a", "2"),
        ("GEOADD", "g", "CH", "CH", "CH"),
        ("GEOADD", "g", "1", "1"),
        ("GEOADD", "g", "181", "0", "a"),
        ("GEOADD", "g", "-180.0001", "0", "a"),
        ("GEOADD", "g", "0", "85.05112879", "a"),
        ("GEOADD", "g", "0", "-85.06", "a"),
        ("GEOADD", "g", "1", "1", "ok", "200", "100", "bad"),
        ("GEOADD", "g", "inf", "0", "a"),
        ("GEOADD", "g", "0", "-inf", "a"),
        ("GEOADD", "g", "abc", "0", "a"),
        ("GEOADD", "g", "0", "1e400", "a"),
        ("GEOADD", "g", "0", "nan", "a"),
        ("GEOADD", "g", " 1", "0", "a"),
        ("GEOADD", "g", "0x10", "1e1", "hex"),
        ("EXISTS", "ok"),
        ("ZRANGE", "g", "0", "-1", "WITHSCORES"),
        ("SET", "str", "x"),
        ("GEOADD", "str", "1", "1", "a"),
        ("GEOADD", "str", "1", "100", "a"),
        ("GEOPOS", "str", "a"), ("GEOHASH", "str", "a"), ("GEODIST", "str", "a", "b"),
        ("GEODIST", "str", "a", "b", "furlong"),
        ("GEOSEARCH", "str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
        ("GEOSEARCHSTORE", "dst", "str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
        ("GEORADIUS", "str", "0", "0", "1", "km"), ("GEORADIUSBYMEMBER", "str", "a", "1", "km"),
        ("GEORADIUS", "str", "999", "0", "1", "km"),
        ("GEOADD", "g"), ("GEODIST", "g", "a"), ("GEOHASH",), ("GEOPOS",),
        ("GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1"),
        ("GEORADIUS", "g", "0", "0", "1"), ("GEORADIUSBYMEMBER", "g", "a", "1"),
        ("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1"),
    ]
    for argv in steps:
        same(pair, *argv)
    same(pair, "DEL", "g", "str", "dst", "dup")


# Search centres: members and coordinates, including the Mercator limits and the antimeridian.
MEMBER_CENTRES = ["city:Paris", "city:Suva", "city:Alert", "city:McMurdo", "edge:east-edge", "edge:north-limit",
                  "city:Apia", "paris:7", "rand:3", "edge:sw-corner"]
COORD_CENTRES = [("2.35", "48.85"), ("180", "0"), ("-180", "-16"), ("0", "85.05112878"), ("0", "-85.05112878"),
                 ("179.5", "-18"), ("-122.4", "37.7"), ("0", "0"), ("139.7", "35.7"), ("-179.99", "64.5")]
RADII = [("0", "m"), ("1", "km"), ("15", "km"), ("100", "mi"), ("1000", "km"), ("5000", "km"), ("60000", "ft"),
         ("20000", "km"), ("12", "M")]
BOXES = [("0", "0", "m"), ("2", "3", "km"), ("40", "30", "km"), ("400", "400", "mi"), ("3000", "1000", "km"),
         ("40000", "20000", "km"), ("1e6", "5e5", "ft")]


def option_sets():
    """Orders × counts, each with a WITH* subset in turn, and every WITH* subset once."""
    subsets = [list(s) for n in range(4) for s in itertools.combinations(WITHS, n)]
    orders = [[], ["ASC"], ["DESC"]]
    counts = [[], ["COUNT", "3"], ["COUNT", "3", "ANY"], ["COUNT", "1000"], ["COUNT", "1", "ANY"]]
    out = []
    for i, (o, c) in enumerate(itertools.product(orders, counts)):
        out.append(subsets[i % len(subsets)] + c + o)
    for s in subsets:
        out.append(["ASC"] + s)
    return out


OPTIONS = option_sets()


def ordered(options):
    """Whether Redis orders the reply: ASC, DESC, or COUNT without ANY (nearest first)."""
    return "ASC" in options or "DESC" in options or ("COUNT" in options and "ANY" not in options)


def compare_search(pair, argv, options):
    got, want = both(pair, *argv)
    if ordered(options):
        assert got == want, argv
    else:
        assert as_set(got) == as_set(want), argv
    return want


def shapes():
    return [("BYRADIUS", *r) for r in RADII] + [("BYBOX", *b) for b in BOXES]


def test_geosearch_every_option(conns):
    found = 0
    for p in (2, 3):
        pair = conns[p]
        rng = random.Random(100 + p)
        centres = [("FROMMEMBER", m) for m in MEMBER_CENTRES] + [("FROMLONLAT", *c) for c in COORD_CENTRES]
        for centre in centres:
            for shape in shapes():
                # Every option set for some, a few drawn for the rest (the run stays short).
                chosen = OPTIONS if rng.random() < 0.15 else rng.sample(OPTIONS, 4)
                for options in chosen:
                    want = compare_search(pair, ("GEOSEARCH", "pts", *centre, *shape, *options), options)
                    found += len(want) if isinstance(want, list) else 0
    assert found > 5000, "the searches found points"


def test_georadius_forms(conns):
    for p in (2, 3):
        pair = conns[p]
        rng = random.Random(200 + p)
        for (lon, lat), radius in itertools.product(COORD_CENTRES, RADII):
            for options in rng.sample(OPTIONS, 3):
                for name in ("GEORADIUS", "GEORADIUS_RO"):
                    compare_search(pair, (name, "pts", lon, lat, *radius, *options), options)
        for member, radius in itertools.product(MEMBER_CENTRES, RADII):
            for options in rng.sample(OPTIONS, 3):
                for name in ("GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"):
                    compare_search(pair, (name, "pts", member, *radius, *options), options)


def test_store_forms(conns):
    pair = conns[2]
    stores = []
    for shape in shapes():
        for extra in ([], ["STOREDIST"], ["COUNT", "5"], ["COUNT", "5", "DESC", "STOREDIST"], ["COUNT", "4", "ANY"]):
            stores.append(("GEOSEARCHSTORE", "dst", "pts", "FROMMEMBER", "city:Paris", *shape, *extra))
            stores.append(("GEOSEARCHSTORE", "dst", "pts", "FROMLONLAT", "179.5", "-18", *shape, *extra))
    for radius in RADII:
        for store in (["STORE", "dst"], ["STOREDIST", "dst"], ["COUNT", "7", "STOREDIST", "dst"],
                      ["STORE", "other", "STOREDIST", "dst"], ["STOREDIST", "other", "ASC", "STORE", "dst"]):
            stores.append(("GEORADIUS", "pts", "2.35", "48.85", *radius, *store))
            stores.append(("GEORADIUSBYMEMBER", "pts", "city:Suva", *radius, *store))
    for argv in stores:
        same(pair, *argv)
        for p in (2, 3):
            same(conns[p], "ZRANGE", "dst", "0", "-1", "WITHSCORES")
        same(pair, "DEL", "dst", "other")
    # Over another type; from a missing source (the destination goes); an empty result.
    for argv in [("SET", "dst", "string"), ("GEOSEARCHSTORE", "dst", "pts", "FROMMEMBER", "city:Rome", "BYRADIUS", "500", "km"),
                 ("TYPE", "dst"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"), ("TTL", "dst"),
                 ("GEOSEARCHSTORE", "dst", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "km"), ("EXISTS", "dst"),
                 ("SET", "dst", "string", "EX", "100"),
                 ("GEORADIUS", "pts", "0", "0", "1", "m", "STORE", "dst"), ("EXISTS", "dst"),
                 ("GEORADIUS", "nokey", "0", "0", "1", "m", "STORE", "dst"),
                 ("GEORADIUSBYMEMBER", "nokey", "x", "bad", "unit", "STORE", "dst"),
                 ("GEORADIUSBYMEMBER", "nokey", "x", "bad", "unit"),
                 ("GEOSEARCHSTORE", "pts", "pts", "FROMMEMBER", "city:Rome", "BYBOX", "3000", "3000", "km", "COUNT", "3"),
                 ("ZRANGE", "pts", "0", "-1", "WITHSCORES")]:
        same(pair, *argv)
    # The last search replaced the data set: load it again for the tests after this one.
    same(pair, "DEL", "pts")
    for i in range(0, len(POINTS), 50):
        same(pair, "GEOADD", "pts", *[str(x) for p in POINTS[i:i + 50] for x in (p[1], p[2], p[0])])


SEARCH_ERRORS = [
    ("GEOSEARCH", "pts", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "pts", "FROMMEMBER", "nope", "BYRADIUS", "1", "lightyears"),
    ("GEOSEARCH", "nokey", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "nokey", "FROMMEMBER", "nope", "BYRADIUS", "-1", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "FROMMEMBER", "city:Paris", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "pts", "FROMMEMBER", "city:Paris", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "pts", "FROMMEMBER", "city:Paris", "FROMMEMBER", "city:Rome", "BYRADIUS", "1000", "km", "ASC"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYBOX", "1", "1", "km", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "pts", "BYRADIUS", "1", "km", "ASC", "COUNT", "2"),
    ("geosearch", "pts", "BYRADIUS", "1", "km", "ASC", "COUNT", "2"),
    ("GeoSearch", "pts", "FROMLONLAT", "0", "0", "ASC", "COUNT", "2"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "abc", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "-0.5", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "yd"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYBOX", "x", "1", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYBOX", "1", "y", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYBOX", "1", "-1", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYBOX", "1", "1", "au"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYBOX", "1", "1"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "200", "0", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "x", "BYRADIUS", "1", "km"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "COUNT", "0"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "COUNT", "-3"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "COUNT", "x"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "COUNT"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "ANY"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "STORE", "x"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "STOREDIST"),
    ("GEOSEARCH", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "bogus"),
    ("GEOSEARCH", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "ANY"),
    ("GEOSEARCH", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "WITHDIST"),
    ("GEOSEARCHSTORE", "d", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "WITHDIST"),
    ("GEOSEARCHSTORE", "d", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "STORE", "x"),
    ("GEOSEARCHSTORE", "d", "pts", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "STOREDIST", "x"),
    ("GEOSEARCHSTORE", "d", "pts", "BYRADIUS", "1", "km", "STOREDIST"),
    ("GEOSEARCHSTORE", "d", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "km", "WITHHASH"),
    ("GEORADIUS", "pts", "0", "0", "1", "km", "STORE", "d", "WITHCOORD"),
    ("GEORADIUS", "pts", "0", "0", "1", "km", "STORE"),
    ("GEORADIUS", "pts", "0", "0", "1", "km", "FROMLONLAT", "0", "0"),
    ("GEORADIUS", "pts", "0", "0", "1", "km", "BYRADIUS", "1", "km"),
    ("GEORADIUS", "pts", "0", "91", "1", "km"),
    ("GEORADIUS", "pts", "0", "0", "x", "km"),
    ("GEORADIUS", "pts", "0", "0", "-1", "km"),
    ("GEORADIUS", "pts", "0", "0", "1", "parsec"),
    ("GEORADIUS", "nokey", "0", "0", "1", "parsec"),
    ("GEORADIUS_RO", "pts", "0", "0", "1", "km", "STORE", "d"),
    ("GEORADIUS_RO", "pts", "0", "0", "1", "km", "STOREDIST", "d"),
    ("GEORADIUSBYMEMBER", "pts", "nope", "1", "km"),
    ("GEORADIUSBYMEMBER", "pts", "nope", "x", "km"),
    ("GEORADIUSBYMEMBER", "pts", "city:Paris", "x", "km"),
    ("GEORADIUSBYMEMBER", "pts", "city:Paris", "1", "x"),
    ("GEORADIUSBYMEMBER", "nokey", "x", "1", "km", "COUNT", "0"),
    ("GEORADIUSBYMEMBER", "nokey", "x", "1", "km", "STORE", "d", "WITHDIST"),
    ("GEORADIUSBYMEMBER_RO", "pts", "city:Paris", "1", "km", "STORE", "d"),
    ("GEORADIUSBYMEMBER_RO", "pts", "city:Paris", "100", "km", "ANY", "COUNT", "2", "WITHDIST"),
]


def test_search_errors(conns):
    for p in (2, 3):
        for argv in SEARCH_ERRORS:
            same(conns[p], *argv)
        same(conns[p], "EXISTS", "d", "x")


def test_multi_exec(conns):
    for p in (2, 3):
        c, r = conns[p]
        commands = [
            ("MULTI",),
            ("GEOADD", "tx", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania", "2.35", "48.85", "Paris"),
            ("GEOADD", "tx", "CH", "XX", "13.4", "38.2", "Palermo"),
            ("GEOADD", "tx", "CH", "1", "1", "Dup", "2", "2", "Dup", "13.5", "38.2", "Palermo", "13.4", "38.2", "Palermo"),
            ("GEOPOS", "tx", "Dup", "Palermo"),
            ("GEOPOS", "tx", "Palermo", "nope"),
            ("GEOHASH", "tx", "Catania"),
            ("GEODIST", "tx", "Palermo", "Catania", "km"),
            ("GEOSEARCH", "tx", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "ASC", "WITHDIST", "WITHCOORD", "WITHHASH"),
            ("GEOSEARCHSTORE", "txd", "tx", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "DESC", "STOREDIST"),
            ("ZRANGE", "txd", "0", "-1", "WITHSCORES"),
            ("GEORADIUS", "tx", "15", "37", "2000", "km", "COUNT", "2", "STORE", "txd2"),
            ("GEORADIUSBYMEMBER_RO", "tx", "Paris", "2000", "km", "WITHDIST", "DESC"),
            ("ZRANGE", "txd2", "0", "-1", "WITHSCORES"),
            ("GEOADD", "tx", "200", "0", "bad"),
            ("EXEC",),
            ("DEL", "tx", "txd", "txd2"),
        ]
        assert c.pipeline(commands) == r.pipeline(commands)


def test_eval(conns):
    for p in (2, 3):
        pair = conns[p]
        scripts = [
            ("return redis.call('GEOADD', KEYS[1], '13.361389', '38.115556', 'Palermo', '15.087269', '37.502669', 'Catania')", "1", "lua"),
            ("return redis.call('GEOPOS', KEYS[1], 'Palermo', 'nope')", "1", "lua"),
            ("return redis.call('GEOHASH', KEYS[1], 'Palermo', 'Catania')", "1", "lua"),
            ("return redis.call('GEODIST', KEYS[1], 'Palermo', 'Catania', 'mi')", "1", "lua"),
            ("return redis.call('GEOSEARCH', KEYS[1], 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'ASC', 'WITHCOORD', 'WITHDIST', 'WITHHASH')", "1", "lua"),
            ("return redis.call('GEORADIUS', KEYS[1], '15', '37', '200', 'km', 'STOREDIST', KEYS[2])", "2", "lua", "luad"),
            ("return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "1", "luad"),
            ("return redis.call('GEOSEARCHSTORE', KEYS[1], KEYS[2], 'FROMMEMBER', 'Catania', 'BYBOX', '500', '500', 'km', 'COUNT', 1)", "2", "luad", "lua"),
            ("return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "1", "luad"),
            ("return redis.pcall('GEOADD', KEYS[1], '200', '100', 'x')", "1", "lua"),
            ("return redis.pcall('GEOSEARCH', KEYS[1], 'FROMMEMBER', 'nope', 'BYRADIUS', '1', 'km')", "1", "lua"),
            ("return redis.pcall('GEODIST', KEYS[1], 'Palermo', 'Catania', 'yards')", "1", "lua"),
            ("return redis.pcall('GEORADIUS_RO', KEYS[1], '15', '37', '200', 'km', 'STORE', 'x')", "1", "lua"),
        ]
        for body, numkeys, *rest in scripts:
            same(pair, "EVAL", body, numkeys, *rest)
        same(pair, "DEL", "lua", "luad")


def test_geo_keys_and_acl_categories(conns):
    pair = conns[2]
    for argv in [("GEORADIUS", "src", "0", "0", "1", "km", "STORE", "dst"),
                 ("GEORADIUS", "src", "0", "0", "1", "km", "STORE", "a", "STOREDIST", "b"),
                 ("GEORADIUS", "src", "0", "0", "1", "km", "STOREDIST", "a", "ASC", "STORE", "b"),
                 ("GEORADIUSBYMEMBER", "src", "m", "1", "km", "STOREDIST", "dst"),
                 ("GEORADIUS", "src", "0", "0", "1", "km"),
                 ("GEOSEARCHSTORE", "dst", "src", "FROMMEMBER", "m", "BYRADIUS", "1", "km"),
                 ("GEOADD", "k", "1", "1", "m")]:
        same(pair, "COMMAND", "GETKEYS", *argv)
    c, r = pair
    assert sorted(c.call("ACL", "CAT", "geo")) == sorted(r.call("ACL", "CAT", "geo"))


def test_acl_key_patterns_cover_the_store_keys(servers):
    """A user limited to `~app:*` may not search into, or store to, another key: each
    server refuses the same requests."""
    replies = []
    for port in (servers[0].port, servers[1].port):
        admin = Raw(port)
        assert admin.call("ACL", "SETUSER", "geouser", "on", "nopass", "~app:*", "+@all") == "OK"
        assert admin.call("GEOADD", "app:src", "2.35", "48.85", "Paris") == 1
        user = Raw(port)
        assert user.call("AUTH", "geouser", "x") == "OK"
        out = [user.call(*argv) for argv in [
            ("GEORADIUS", "app:src", "2", "48", "500", "km", "STORE", "other"),
            ("GEORADIUS", "app:src", "2", "48", "500", "km", "STOREDIST", "other"),
            ("GEORADIUS", "app:src", "2", "48", "500", "km", "STORE", "app:dst"),
            ("GEORADIUSBYMEMBER", "app:src", "Paris", "5", "km", "STORE", "app:ok", "STOREDIST", "other"),
            ("GEORADIUSBYMEMBER", "app:src", "Paris", "5", "km", "STOREDIST", "app:dst"),
            ("GEOSEARCHSTORE", "other", "app:src", "FROMMEMBER", "Paris", "BYRADIUS", "5", "km"),
            ("GEOSEARCHSTORE", "app:dst", "other", "FROMMEMBER", "Paris", "BYRADIUS", "5", "km"),
            ("GEOSEARCH", "other", "FROMMEMBER", "Paris", "BYRADIUS", "5", "km"),
            ("GEOADD", "other", "1", "1", "x"),
            ("EXISTS", "other", "app:ok"),
        ]]
        replies.append([r.split(".")[0] if isinstance(r, Error) else r for r in out])
        assert admin.call("EXISTS", "other", "app:ok") == 0
        assert admin.call("DEL", "app:src", "app:dst") == 2
        assert admin.call("ACL", "DELUSER", "geouser") == 1
        user.close()
        admin.close()
    assert replies[0] == replies[1]


def test_geo_writes_replicate(servers):
    """GEOADD and the STORE forms reach a replica through the WAL like any write: the replica
    then holds the same scores and answers the read-only searches the same; it refuses
    GEORADIUS (a write command, as in Redis) and serves GEORADIUS_RO."""
    primary = Cairnd()
    replica = Cairnd()
    try:
        p, r = Raw(primary.port), Raw(replica.port)
        assert r.call("REPLICAOF", "127.0.0.1", str(primary.port)) == "OK"
        writes = [("GEOADD", "pts", *[str(x) for q in POINTS[i:i + 50] for x in (q[1], q[2], q[0])])
                  for i in range(0, len(POINTS), 50)]
        writes += [("GEOSEARCHSTORE", "near", "pts", "FROMMEMBER", "city:Paris", "BYRADIUS", "30", "km", "STOREDIST"),
                   ("GEORADIUS", "pts", "178", "-18", "800", "km", "STORE", "fiji"),
                   ("GEOADD", "pts", "XX", "CH", "0", "0", "city:Paris")]
        p.pipeline(writes)
        deadline = time.time() + 30
        while p.call("WAIT", "1", "1000") != 1:
            assert time.time() < deadline, "the replica did not acknowledge"
        for key in ("pts", "near", "fiji"):
            want = p.call("ZRANGE", key, "0", "-1", "WITHSCORES")
            assert len(want) > 0
            while r.call("ZRANGE", key, "0", "-1", "WITHSCORES") != want:
                assert time.time() < deadline, f"{key} did not replicate"
                time.sleep(0.05)
        search = ("GEOSEARCH", "pts", "FROMLONLAT", "2.35", "48.85", "BYBOX", "100", "100", "km", "ASC", "WITHDIST")
        assert r.call(*search) == p.call(*search)
        assert r.call("GEORADIUS_RO", "pts", "2.35", "48.85", "50", "km", "ASC") == \
            p.call("GEORADIUS_RO", "pts", "2.35", "48.85", "50", "km", "ASC")
        assert r.call("GEORADIUS", "pts", "2.35", "48.85", "50", "km").startswith("READONLY")
        p.close()
        r.close()
    finally:
        replica.cleanup()
        primary.cleanup()


def test_ties_under_count_are_redis_order(conns):
    """Points at equal distances: with COUNT keeping fewer than were found, Redis's partial
    quicksort decides which are kept and in what order; Cairn follows it."""
    pair = conns[2]
    args = []
    for i in range(45):
        args += ["10", "10", f"same:{i:02}"]
    for i in range(25):
        args += ["10.5", "10", f"east:{i:02}", "9.5", "10", f"west:{i:02}"]
    same(pair, "GEOADD", "ties", *args)
    for count in list(range(1, 12)) + [20, 40, 44, 45, 46, 60, 94, 95, 96, 200]:
        for order in ([], ["ASC"], ["DESC"]):
            for centre in (["FROMLONLAT", "10", "10"], ["FROMMEMBER", "same:07"], ["FROMLONLAT", "10", "10.2"]):
                argv = ("GEOSEARCH", "ties", *centre, "BYRADIUS", "200", "km", "COUNT", str(count), *order)
                same(pair, *argv)
                same(pair, *argv, "WITHDIST")
    same(pair, "DEL", "ties")
