import Crypto
import RESP
import Rocks

/// `DEBUG DIGEST`: a SHA-1 over everything a client can read, so two servers (a primary and
/// its replica at the same offset) can be compared. Every column family in name order, every
/// key that has not expired with its stored value, and for a hash, set, sorted set or list
/// every entry of its current version in the members family (older versions, which compaction
/// drops at its own pace, do not count). 40 zeros for an empty database, as Redis.
enum DigestCommands {
    static let all: [Command] = [
        Command("debug") {
            call, out throws(CommandError) in
            // Redis's switch of active expiry, which test suites use: `1` on, `0` off.
            if call[1].isKeyword("SET-ACTIVE-EXPIRE"), call.count == 3 {
                call.engine.expirySweep.active.store(try call.integer(2) != 0, ordering: .relaxed)
                out.simpleString("OK")
                return
            }
            guard call[1].isKeyword("DIGEST"), call.count == 2 else {
                throw CommandError("ERR", "DEBUG \(call.text(1)) is not supported: Cairn has DEBUG DIGEST and DEBUG SET-ACTIVE-EXPIRE")
            }
            out.bulk(try digest(call.engine))
        }.reachingEverything(write: false),
    ]

    static func digest(_ engine: Engine) throws(CommandError) -> String {
        var hasher = Insecure.SHA1()
        var any = false
        let now = Clock.milliseconds()
        let database = engine.database
        let snapshot = try engine.storage("digest") { try database.snapshot() }
        defer { snapshot.release() }
        var options = ReadOptions()
        options.snapshot = snapshot
        options.fillCache = false
        func feed(_ bytes: UnsafeRawBufferPointer) {
            BigEndian.withBytes(of: UInt32(bytes.count)) { hasher.update(bufferPointer: $0) }
            hasher.update(bufferPointer: bytes)
        }
        for family in engine.allFamilies {
            Array(family.name.utf8).withUnsafeBytes { feed($0) }
            try engine.storage("digest") {
                try database.withCursor(in: family.handle, options: options) { cursor in
                    cursor.seekToFirst()
                    while cursor.isValid {
                        let live = cursor.withValue { raw -> (type: UInt8, payload: [UInt8])? in
                            guard let h = ValueFormat.header(of: raw), !h.isExpired(now: now) else { return nil }
                            return (h.type, Array(raw[h.payloadOffset...]))
                        }
                        if let live {
                            any = true
                            let key = cursor.key
                            key.withUnsafeBytes { feed($0) }
                            cursor.withValue { feed($0) }
                            if let type = KeyType(rawValue: live.type), type != .string,
                               let meta = CollectionMetadata(type: type, payload: live.payload, expiresAt: nil) {
                                try feedMembers(of: key, meta, in: family, database: database, options: options, feed)
                            }
                        }
                        cursor.next()
                    }
                    try cursor.check()
                }
            }
        }
        guard any else { return String(repeating: "0", count: 40) }
        return hasher.finalize().map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    private static func feedMembers(
        of key: [UInt8], _ meta: CollectionMetadata, in family: Family, database: Database, options: ReadOptions,
        _ feed: (UnsafeRawBufferPointer) -> Void
    ) throws {
        let prefix = meta.memberPrefix(family: family.name, key: key)
        var bounded = options
        bounded.lowerBound = prefix
        bounded.upperBound = Call.prefixEnd(prefix)
        try database.withCursor(in: family.members, options: bounded) { cursor in
            cursor.seek(prefix)
            while cursor.isValid {
                cursor.withKey { feed(UnsafeRawBufferPointer(rebasing: $0[prefix.count...])) }
                cursor.withValue { feed($0) }
                cursor.next()
            }
            try cursor.check()
        }
    }
}
