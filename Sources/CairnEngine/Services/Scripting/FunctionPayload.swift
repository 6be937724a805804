/// FUNCTION DUMP's payload and what FUNCTION RESTORE accepts, in Redis 7.0's format so a
/// payload moves between Cairn and Redis both ways: one `0xf5` opcode (RDB_OPCODE_FUNCTION2)
/// and an RDB string holding the library's code per library, then the RDB version (10, two
/// bytes little-endian) and the CRC64 (Jones polynomial, little-endian) of everything before.
///
/// Cairn writes the code as a plain RDB string; Redis compresses strings over 20 bytes with
/// LZF when that saves space, so the bytes differ from Redis's for the same libraries, but
/// either reads the other's. Reading takes plain, integer-encoded and LZF-compressed strings.
enum FunctionPayload {
    static let functionOpcode: UInt8 = 0xf5

    static func encode(_ codes: [[UInt8]]) -> [UInt8] {
        var writer = DumpWriter()
        for code in codes {
            writer.byte(functionOpcode)
            writer.string(code)
        }
        return writer.finish()
    }

    /// The libraries' codes in a payload; Redis's errors for a bad footer or content.
    static func decode(_ payload: [UInt8]) throws(CommandError) -> [[UInt8]] {
        guard DumpPayload.isIntact(payload) else { throw badFooter }
        var reader = RDBReader(payload, end: payload.count - 10)
        var codes: [[UInt8]] = []
        while !reader.atEnd {
            guard (try? reader.byte()) == functionOpcode else { throw CommandError("ERR", "given type is not a function") }
            guard let code = try? reader.string() else { throw CommandError("ERR", "Failed loading library payload") }
            codes.append(code)
        }
        return codes
    }

    static let badFooter = CommandError("ERR", "DUMP payload version or checksum are wrong")
}
