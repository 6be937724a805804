import Synchronization

/// Counts the snapshots held server-wide and by each ACL user, so `max-snapshots` is shared:
/// one user (however many connections it opens) holds at most `max-snapshots-per-user` of
/// them, and the rest stay available to other users. The per-connection cap
/// (`max-snapshots-per-client`) is checked by SNAPSHOT.CREATE against the session itself.
final class SnapshotQuota: Sendable {
    private struct Counts {
        var total = 0
        var byUser: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())

    /// Why a snapshot could not be taken.
    enum Refusal: Error {
        case server, user
    }

    /// Reserves one snapshot for `user`, or says which cap refused it.
    func reserve(for user: String, userLimit: Int, serverLimit: Int) -> Refusal? {
        counts.withLock { c in
            if c.total >= serverLimit { return .server }
            if c.byUser[user, default: 0] >= userLimit { return .user }
            c.total += 1
            c.byUser[user, default: 0] += 1
            return nil
        }
    }

    /// Gives back a snapshot reserved for `user`.
    func release(for user: String) {
        counts.withLock { c in
            c.total -= 1
            let left = c.byUser[user, default: 1] - 1
            c.byUser[user] = left > 0 ? left : nil
        }
    }
}
