/// Turning the expiry arguments of SET, GETEX, SETEX and EXPIRE into absolute milliseconds,
/// with Redis's checks and error texts.
enum ExpiryUnit {
    case seconds, milliseconds
}

extension Call {
    /// Absolute expiry in Unix ms for `value` given in `unit`, relative to now unless `absolute`.
    /// `allowNonPositive` is for EXPIRE, where a time in the past deletes the key.
    func expiry(_ value: Int64, _ unit: ExpiryUnit, absolute: Bool, allowNonPositive: Bool = false) throws(CommandError) -> Int64 {
        if !allowNonPositive && value <= 0 { throw .invalidExpire(name) }
        var ms = value
        if unit == .seconds {
            let (m, overflow) = value.multipliedReportingOverflow(by: 1000)
            if overflow { throw .invalidExpire(name) }
            ms = m
        }
        if !absolute {
            let (sum, overflow) = ms.addingReportingOverflow(now)
            if overflow { throw .invalidExpire(name) }
            ms = sum
        }
        return ms
    }
}
