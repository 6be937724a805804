@testable import CairnEngine
import RESP
import Testing

/// The pure parts of Redis 7 functions: the library shebang, name collisions between
/// libraries, and FUNCTION DUMP's payload (RDB strings, LZF, CRC64); then FCALL in-process.
@Suite struct FunctionTests {
    @Test func shebang() throws {
        let (name, body) = try FunctionLibrary.parseShebang(Array("#!lua name=mylib\nreturn 1".utf8))
        #expect(name == "mylib")
        #expect(body == Array("\nreturn 1".utf8), "the shebang line is emptied so line numbers stay")
        func error(_ code: String) -> String? {
            do {
                _ = try FunctionLibrary.parseShebang(Array(code.utf8))
                return nil
            } catch {
                return error.message
            }
        }
        #expect(error("return 1") == "Missing library metadata")
        #expect(error("#!lua name=x") == "Invalid library metadata")
        #expect(error("#!lua\n") == "Library name was not given")
        #expect(error("#!js name=x\n") == "Engine 'js' not found")
        #expect(error("#!lua name=a name=b\n") == "Invalid metadata value, name argument was given multiple times")
        #expect(error("#!lua x=1\n") == "Invalid metadata value given: x=1")
        #expect(error("#!lua name=a-b\n")?.hasPrefix("Library names can only contain") == true)
    }

    @Test func functionNamesAreUniqueAcrossLibrariesRegardlessOfCase() throws {
        let a = FunctionLibrary(name: "a", code: [], functions: [LibraryFunction(name: "Go", description: nil, flags: [])])
        let b = FunctionLibrary(name: "b", code: [], functions: [LibraryFunction(name: "go", description: nil, flags: [])])
        var set = LibrarySet([a])
        #expect(throws: CommandError.self) { try set.add([b], replace: false, quotedLibraryName: true) }
        #expect(set.byName.keys.sorted() == ["a"], "a refused add changes nothing")
        #expect(set.function(named: "GO")?.library.name == "a")
        let a2 = FunctionLibrary(name: "a", code: [1], functions: [LibraryFunction(name: "other", description: nil, flags: [])])
        try set.add([a2, b], replace: true, quotedLibraryName: false)
        #expect(set.function(named: "go")?.library.name == "b")
        #expect(set.functionCount == 2)
    }

    @Test func payloadRoundTripAndRedisBytes() throws {
        #expect(FunctionPayload.encode([]) == [0x0a, 0x00, 0x5d, 0x9b, 0x5c, 0x40, 0x0f, 0x7f, 0xa2, 0xda], "Redis's empty payload")
        let codes = [Array("#!lua name=a\nx".utf8), [UInt8](repeating: 65, count: 20_000)]
        #expect(try FunctionPayload.decode(FunctionPayload.encode(codes)) == codes)
        var damaged = FunctionPayload.encode(codes)
        damaged[3] ^= 1
        #expect(throws: CommandError.self) { try FunctionPayload.decode(damaged) }
        // LZF as Redis writes it: a literal run, then a back reference.
        #expect(LZF.decompress([2, 97, 98, 99, 0x40, 2][...], length: 7) == Array("abcabca".utf8))
        #expect(LZF.decompress([0x40, 2][...], length: 3) == nil, "a reference before any output")
    }

    @Test func fcallInProcess() throws {
        let h = try EngineHarness()
        let code = "#!lua name=lib\nredis.register_function('incr2', function(keys) redis.call('incr', keys[1]) return redis.call('incr', keys[1]) end)"
        #expect(h.run("FUNCTION", "LOAD", code) == .bulk("lib"))
        #expect(h.run("FCALL", "incr2", "1", "n") == .integer(2))
        #expect(h.run("FCALL_RO", "incr2", "1", "n") == .error("ERR Can not execute a script with write flag using *_ro command."))
        guard case .bulkString(let payload) = h.run("FUNCTION", "DUMP") else {
            Issue.record("FUNCTION DUMP gives a bulk string")
            return
        }
        #expect(h.run("FUNCTION", "FLUSH") == .simpleString("OK"))
        #expect(h.run("FCALL", "incr2", "1", "n") == .error("ERR Function not found"))
        #expect(h.run([Array("FUNCTION".utf8), Array("RESTORE".utf8), payload]) == .simpleString("OK"))
        #expect(h.run("FCALL", "incr2", "1", "n") == .integer(4))
    }
}
