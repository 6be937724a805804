#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock time as Redis uses it for expiry: Unix milliseconds and microseconds.
public enum Clock {
    @Sendable public static func milliseconds() -> Int64 { microseconds() / 1000 }

    public static func microseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
