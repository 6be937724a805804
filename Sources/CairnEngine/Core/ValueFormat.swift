/// The on-disk form of every value Cairn stores: a small header, then the payload.
///
/// ```
/// byte 0   version << 4 | type      (version 1; type 0 = string)
/// byte 1   flags                    (bit 0: an expiry follows)
/// [8 bytes big-endian Unix milliseconds, when flag bit 0 is set]
/// payload
/// ```
/// The header exists from the first release so TTLs and later value types need no migration.
/// Merge operators and the expiry compaction filter read it too (see `EngineMergeOperator`).
/// Documented for operators in docs/value-format.md.
public enum ValueFormat {
    public static let version: UInt8 = 1
    public static let stringType: UInt8 = 0
    static let expiryFlag: UInt8 = 0x01

    /// A decoded header over borrowed bytes.
    public struct Header: Equatable, Sendable {
        public var type: UInt8
        /// Expiry as Unix milliseconds, or nil for a key that never expires.
        public var expiresAt: Int64?
        /// Offset of the payload in the stored value.
        public var payloadOffset: Int

        public func isExpired(now: Int64) -> Bool {
            if let expiresAt { return expiresAt <= now }
            return false
        }
    }

    /// Reads the header; nil when the bytes are not a Cairn value (too short or unknown version).
    public static func header(of value: UnsafeRawBufferPointer) -> Header? {
        guard value.count >= 2, value[0] >> 4 == 1 else { return nil }
        let type = value[0] & 0x0F
        if value[1] & 0x01 != 0 {
            guard value.count >= 10 else { return nil }
            return Header(type: type, expiresAt: BigEndian.read(Int64.self, value, at: 2), payloadOffset: 10)
        }
        return Header(type: type, expiresAt: nil, payloadOffset: 2)
    }

    public static func header(of value: [UInt8]) -> Header? {
        value.withUnsafeBytes { header(of: $0) }
    }

    /// Encodes a string value with an optional expiry.
    public static func encode(_ payload: some Collection<UInt8>, expiresAt: Int64? = nil) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(payload.count + (expiresAt == nil ? 2 : 10))
        appendHeader(to: &out, type: stringType, expiresAt: expiresAt)
        out.append(contentsOf: payload)
        return out
    }

    public static func appendHeader(to out: inout [UInt8], type: UInt8, expiresAt: Int64?) {
        out.append(version << 4 | type)
        if let expiresAt {
            out.append(expiryFlag)
            BigEndian.append(expiresAt, to: &out)
        } else {
            out.append(0)
        }
    }

    /// The payload of a stored value that has not expired by `now`, in the value's own memory;
    /// nil when the value is missing, expired, or not a Cairn value.
    public static func livePayload(of value: UnsafeRawBufferPointer?, now: Int64) -> UnsafeRawBufferPointer? {
        guard let value, let h = header(of: value), !h.isExpired(now: now) else { return nil }
        return UnsafeRawBufferPointer(rebasing: value[h.payloadOffset...])
    }

    /// `livePayload` for a string only: nil for a collection's metadata (MGET, grouped GETs).
    public static func liveString(of value: UnsafeRawBufferPointer?, now: Int64) -> UnsafeRawBufferPointer? {
        guard let value, let h = header(of: value), h.type == stringType, !h.isExpired(now: now) else { return nil }
        return UnsafeRawBufferPointer(rebasing: value[h.payloadOffset...])
    }

    /// The payload of a stored value (a copy), or nil when the value is not a Cairn value.
    public static func payload(of value: [UInt8]) -> [UInt8]? {
        guard let h = header(of: value) else { return nil }
        return Array(value[h.payloadOffset...])
    }
}
