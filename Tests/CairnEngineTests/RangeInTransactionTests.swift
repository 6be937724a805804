import CairnEngine
import RESP
import Testing

/// DELRANGE inside MULTI/EXEC: it covers keys written earlier in the same EXEC, and later
/// commands of the transaction read the range as deleted.
@Suite struct RangeInTransactionTests {
    @Test func unboundedDelrangeCoversKeysStagedEarlierInTheSameExec() throws {
        let h = try EngineHarness()
        h.run("SET", "m1", "stored")
        h.run("MULTI")
        h.run("SET", "z1", "staged")  // after every stored key: only the batch holds it
        h.run("SET", "a1", "outside")
        h.run("DELRANGE", "[m", "+")
        h.run("GET", "z1")
        h.run("SET", "z2", "after")
        #expect(h.run("EXEC") == .array([.ok, .ok, .ok, .null, .ok]))
        #expect(h.run("GET", "z1") == .null)
        #expect(h.run("GET", "m1") == .null)
        #expect(h.run("GET", "z2") == .bulk("after"))
        #expect(h.run("GET", "a1") == .bulk("outside"))
    }

    @Test func readsLaterInTheTransactionSeeTheRangeDeleted() throws {
        let h = try EngineHarness()
        h.run("MSET", "k1", "1", "k2", "2", "k3", "3")
        h.run("MULTI")
        h.run("DELRANGE", "[k1", "(k3")
        h.run("MGET", "k1", "k2", "k3")
        h.run("EXISTS", "k2")
        h.run("SET", "k2", "again")
        h.run("GET", "k2")
        #expect(h.run("EXEC") == .array([.ok, .array([.null, .null, .bulk("3")]), .integer(0), .ok, .bulk("again")]))
        #expect(h.run("MGET", "k1", "k2", "k3") == .array([.null, .bulk("again"), .bulk("3")]))
    }
}
