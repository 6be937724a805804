/// INCR's rule, whichever path runs it (the command alone, EXEC, a script, or the grouped
/// write of many clients): the stored string read as a signed 64-bit integer, 0 when the key
/// is missing, plus the delta, with Redis's errors; the new value keeps the old one's TTL, as
/// Redis keeps it.
struct Counter {
    let value: Int64
    let expiresAt: Int64?

    /// The stored payload of the new value.
    var payload: [UInt8] { Bytes.decimal(value) }

    static func increment(_ payload: [UInt8]?, expiresAt: Int64?, by delta: Int64) -> Result<Counter, CommandError> {
        var base: Int64 = 0
        if let payload {
            guard let v = Bytes.int64(payload) else { return .failure(.notInteger) }
            base = v
        }
        let (result, overflow) = base.addingReportingOverflow(delta)
        return overflow ? .failure(.overflow) : .success(Counter(value: result, expiresAt: expiresAt))
    }
}
