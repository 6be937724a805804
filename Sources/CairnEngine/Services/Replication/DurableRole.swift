#if canImport(Glibc)
import Glibc
#endif

/// A node's role survives a restart: whenever it starts or stops following a primary (REPLICAOF,
/// FAILOVER's hand-over, a promotion, a demotion it performs itself), the `replicaof` line of its
/// config file says so before the change is acknowledged, in the form redis-server writes
/// (`replicaof <host> <port>`; no line for a primary). Otherwise a demoted primary restarted from
/// its own file would come back as a second primary beside the real one.
///
/// Only that line changes: the rest of the file (comments, order, other options) stays as the
/// operator wrote it, unlike CONFIG REWRITE, which writes every option.
extension Engine {
    /// Records `target` (`host port`, or empty for a primary) in the config file, if the server
    /// runs with one. Throws when the file cannot be read or written.
    func persistReplicaof(_ target: String) throws(CommandError) {
        guard let path = hooks?.configFilePath else { return }
        guard let bytes = readFile(path) else {
            throw CommandError("ERR", "cannot record the new role: the config file \(path) cannot be read")
        }
        let text = ConfigFile.settingOption("replicaof", aliases: ["slaveof"], to: target, in: String(decoding: bytes, as: UTF8.self))
        guard writeFileAtomically(path, text) else {
            throw CommandError("ERR", "cannot record the new role in the config file \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// `persistReplicaof` for a change nobody waits on (the link's hand-over): a failure is
    /// logged, since the role has changed either way.
    func persistReplicaofLogging(_ target: String) {
        do throws(CommandError) { try persistReplicaof(target) } catch {
            logger.error("\(error.message); a restart would come back in the role the file still says")
        }
    }
}
