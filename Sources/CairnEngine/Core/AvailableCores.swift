#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The cores this process may really use: the CPUs its affinity mask allows (`taskset`, a
/// container's cpuset) and no more than its cgroup's CPU quota (`docker --cpus 1.5` gives 2),
/// where the machine's count alone would start more workers and background jobs than can run
/// at once, and each would wait its turn on the cores there are.
public enum AvailableCores {
    public static let count: Int = {
        var n = affinityCount() ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        if let quota = quotaCores() { n = min(n, quota) }
        return max(1, n)
    }()

    /// CPUs in this process's affinity mask, from `Cpus_allowed_list` in /proc/self/status.
    static func affinityCount() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return nil }
        return cpuCount(list: String(line.dropFirst("Cpus_allowed_list:".count)))
    }

    /// CPUs in a kernel CPU list ("0-3,8,10-11"); nil when it does not parse.
    static func cpuCount(list: String) -> Int? {
        var total = 0
        for part in list.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",") {
            let ends = part.split(separator: "-").map { Int($0) }
            switch ends.count {
            case 1:
                guard ends[0] != nil else { return nil }
                total += 1
            case 2:
                guard let a = ends[0], let b = ends[1], b >= a else { return nil }
                total += b - a + 1
            default:
                return nil
            }
        }
        return total > 0 ? total : nil
    }

    /// The cgroup's CPU quota rounded up to whole cores, nil when it sets none.
    static func quotaCores() -> Int? {
        guard let membership = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        for line in membership.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let path = String(parts[2])
            if parts[0] == "0" && parts[1].isEmpty {
                // cgroup v2: "max 100000" or "150000 100000".
                if let text = try? String(contentsOfFile: "/sys/fs/cgroup\(path)/cpu.max", encoding: .utf8),
                   let cores = quotaCores(v2: text) {
                    return cores
                }
            } else if parts[1].split(separator: ",").contains("cpu") {
                // cgroup v1: the quota (-1: none) and the period, in microseconds.
                for dir in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
                    if let quota = try? String(contentsOfFile: "\(dir)\(path)/cpu.cfs_quota_us", encoding: .utf8),
                       let period = try? String(contentsOfFile: "\(dir)\(path)/cpu.cfs_period_us", encoding: .utf8),
                       let cores = quotaCores(quota: quota, period: period) {
                        return cores
                    }
                }
            }
        }
        return nil
    }

    /// Cores from cgroup v2's `cpu.max` text; nil for "max".
    static func quotaCores(v2 text: String) -> Int? {
        let words = text.split(whereSeparator: \.isWhitespace)
        guard words.count == 2 else { return nil }
        return quotaCores(quota: String(words[0]), period: String(words[1]))
    }

    /// Cores from a quota and a period (microseconds), rounded up; nil without a quota.
    static func quotaCores(quota: String, period: String) -> Int? {
        guard let q = Int(quota.trimmingCharacters(in: .whitespacesAndNewlines)), q > 0,
              let p = Int(period.trimmingCharacters(in: .whitespacesAndNewlines)), p > 0 else { return nil }
        return (q + p - 1) / p
    }
}
