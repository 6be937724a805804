import Synchronization

/// The lengths of values APPEND just grew, so the next APPEND of the key need not read it.
///
/// APPEND writes only its new bytes (a merge operand) but must answer the new length; reading
/// the value to learn its length folds every operand into a copy of the whole value, so
/// growing a value to 512 MB in 8 MB steps cost a read of up to 512 MB per step (50 s in
/// all). The length APPEND computed stays right as long as nothing else wrote the key: every
/// write moves its key-lock stripe's version (`KeyLocks.changed`, what WATCH relies on), so an
/// entry holds the version its APPEND left, and is used only by an APPEND that holds the
/// stripe and finds the same version. A write to another key of the stripe only costs a read.
/// Only values without a TTL are appended to this way (an expiry is a write, which moves the
/// version).
final class AppendLengths: Sendable {
    private struct Key: Hashable {
        let family: ObjectIdentifier
        let key: [UInt8]
    }
    private struct Known {
        let version: UInt64
        let length: Int
    }

    /// Entries kept at most; the table is emptied when full (appends to many keys at once
    /// then read their lengths, as before).
    static let capacity = 1024

    private let known = Mutex<[Key: Known]>([:])

    /// The length of `key`'s value if APPEND left it at stripe version `version`.
    func length(of key: [UInt8], in family: Family, version: UInt64) -> Int? {
        known.withLock { table in
            guard let k = table[Key(family: ObjectIdentifier(family), key: key)], k.version == version else { return nil }
            return k.length
        }
    }

    func remember(_ key: [UInt8], in family: Family, version: UInt64, length: Int) {
        known.withLock { table in
            if table.count >= AppendLengths.capacity { table.removeAll(keepingCapacity: true) }
            table[Key(family: ObjectIdentifier(family), key: key)] = Known(version: version, length: length)
        }
    }

    /// Forgets every length (the database was replaced).
    func forgetAll() {
        known.withLock { $0.removeAll() }
    }
}
