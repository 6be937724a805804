public import CairnEngine
public import Logging
#if canImport(Glibc)
import Glibc
#endif

/// How the process's file descriptors are shared between clients, RocksDB's table files and
/// the server itself, fitted to the open files limit at start as Redis's
/// `adjustOpenFilesLimit` does (https://redis.io/docs/latest/develop/reference/clients/#maximum-concurrent-connected-clients):
/// first the soft `RLIMIT_NOFILE` is raised towards what the configuration needs (at most to
/// the hard limit); if that is still short, `maxclients` and `max-open-files` are lowered to
/// fit, with a warning, so the server never runs out of descriptors at `accept` or in RocksDB.
public struct DescriptorBudget: Sendable, Equatable {
    /// Descriptors Redis keeps for itself (`CONFIG_MIN_RESERVED_FDS`): here the standard
    /// streams, the listener, Dispatch's and the signal handlers' descriptors, RocksDB's
    /// LOCK, LOG, MANIFEST, WAL and directory handles, the spare descriptor of `Server`, a
    /// backup's or CONFIG REWRITE's open files. cairnd idles at about 20.
    public static let reserved = 32
    /// The fewest table files RocksDB keeps open (it raises smaller `max_open_files` to this).
    public static let minimumTableFiles = 20

    public var maxclients: Int
    public var maxOpenFiles: Int

    /// Descriptors the server needs besides clients and table files: `reserved`, one epoll set
    /// per worker, and one table file being written per background job.
    public static func overhead(_ config: Configuration) -> Int {
        reserved + config.server.ioThreads + config.maxBackgroundJobs
    }

    /// Descriptors `config` needs at most.
    public static func needed(_ config: Configuration) -> Int {
        config.server.maxclients + config.maxOpenFiles + overhead(config)
    }

    /// The shares that fit `limit` descriptors: the configured ones when they fit; otherwise
    /// RocksDB keeps up to half of what is left (at least `minimumTableFiles`) and clients get
    /// the rest. Nil when not even one client fits.
    public static func fit(_ config: Configuration, limit: Int) -> DescriptorBudget? {
        let configured = DescriptorBudget(maxclients: config.server.maxclients, maxOpenFiles: config.maxOpenFiles)
        if limit >= needed(config) { return configured }
        let available = limit - overhead(config)
        let tables = min(config.maxOpenFiles, max(minimumTableFiles, available / 2))
        let clients = min(config.server.maxclients, available - tables)
        guard clients >= 1 else { return nil }
        return DescriptorBudget(maxclients: clients, maxOpenFiles: tables)
    }

    /// Raises the soft open files limit towards what `config` needs, then lowers the server's
    /// `maxclients` (`config.server`) and the engine's `max-open-files` to what the limit allows, logging a warning when it
    /// does. Throws when the limit is too low to serve even one client.
    public static func apply(to config: inout Configuration, logger: Logger) throws(Failure) {
        let needed = needed(config)
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return }
        if limits.rlim_cur != rlim_t.max && limits.rlim_cur < rlim_t(needed) {
            var raised = limits
            raised.rlim_cur = limits.rlim_max == rlim_t.max ? rlim_t(needed) : min(rlim_t(needed), limits.rlim_max)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                if raised.rlim_cur > limits.rlim_cur {
                    logger.notice("raised the open files limit from \(limits.rlim_cur) to \(raised.rlim_cur)")
                }
                limits = raised
            } else {
                logger.warning("cannot raise the open files limit to \(raised.rlim_cur): \(String(cString: strerror(errno)))")
            }
        }
        let limit = limits.rlim_cur == rlim_t.max ? Int.max : Int(limits.rlim_cur)
        guard let budget = fit(config, limit: limit) else {
            throw Failure(limit: limit, needed: needed, minimum: overhead(config) + minimumTableFiles + 1)
        }
        if budget.maxclients < config.server.maxclients || budget.maxOpenFiles < config.maxOpenFiles {
            logger.warning("the open files limit (ulimit -n) is \(limit) and the configuration needs \(needed) (maxclients \(config.server.maxclients) + max-open-files \(config.maxOpenFiles) + \(overhead(config)) for the server): maxclients has been reduced to \(budget.maxclients) and max-open-files to \(budget.maxOpenFiles). Raise the limit (ulimit -n, LimitNOFILE= in systemd) to at least \(needed) to keep them.")
        }
        config.server.maxclients = budget.maxclients
        config.maxOpenFiles = budget.maxOpenFiles
    }

    /// The open files limit cannot hold the server with a single client.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var limit: Int
        public var needed: Int
        public var minimum: Int
        public var description: String {
            "the open files limit (ulimit -n) of \(limit) is not enough for the server to start: it needs at least \(minimum) (\(needed) for the configured maxclients and max-open-files)"
        }
    }
}
