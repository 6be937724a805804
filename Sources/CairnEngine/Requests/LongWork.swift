/// Collection commands whose work grows with the collections they touch (set algebra, *STORE,
/// ZUNION/ZINTER, ZREMRANGE*, LINSERT, LREM, LPOS, COPY, RENAME, HGETALL or LRANGE of a big key)
/// run off the worker once that work is big, so they hold up no other client:
///
/// - the command table says how to measure a request's work (`Command.work`: the members of the
///   collections it names, or the length of the range it asks for), which `Engine.run` measures
///   from the metadata before the handler runs; past `Engine.longWorkMembers` the handler runs as
///   deferred work (`Outcome.deferred`), on another thread, while the worker serves its other
///   clients (this client's later requests wait, in order);
/// - running long, the request *claims* its keys instead of holding their lock stripes
///   (`KeyLocks`): only a client of those very keys waits for it, not one whose key shares a
///   stripe, and its writes commit in pieces behind a journal entry (`Engine.writeClaimed`), so
///   other clients' writes run between them rather than behind one huge write batch.
///
/// The same handler runs either way, after the same admission step; inside MULTI, a script or
/// in-process (no server to defer to) it runs inline as before.
extension Engine {
    /// Members past which a request runs long: a few milliseconds of RocksDB reads and writes.
    static let longWorkMembers: UInt64 = 8192

    /// Whether `command` should run off the worker for this request.
    func runsLong(_ command: Command, _ call: Call) -> Bool {
        guard let work = command.work, call.session.canDefer, call.session.transaction == nil,
              !call.session.runsLong, !call.session.holdsKeyLocks, call.session.outcome.deferred == nil,
              !scripting.isRunning(for: call.session)
        else { return false }
        return ((try? work(command, call)) ?? 0) >= Engine.longWorkMembers
    }
}

extension Call {
    /// The members of the collection at `key` (0 for a string or a missing key).
    func collectionSize(_ key: [UInt8]) throws(CommandError) -> UInt64 {
        try withStored(key) { (type: KeyType?, payload: UnsafeRawBufferPointer?, expiresAt: Int64?) -> UInt64 in
            guard let type, type != .string, let payload,
                  let meta = CollectionMetadata(type: type, payload: payload, expiresAt: expiresAt)
            else { return 0 }
            return meta.size
        }
    }

    /// The work of a request that reads or writes every member of the collections it names.
    @Sendable static func membersOfKeys(_ call: Call, keys: [[UInt8]]) throws(CommandError) -> UInt64 {
        var total: UInt64 = 0
        for key in keys { total &+= try call.collectionSize(key) }
        return total
    }
}

extension Command {
    /// This command measured by the members of the collections it names.
    func measuringMembers() -> Command {
        measuringWork { command, call throws(CommandError) in try Call.membersOfKeys(call, keys: command.keys(in: call.argv)) }
    }

    /// This command measured by the index range at arguments `start` and `stop` (LRANGE,
    /// ZRANGE): their span when both count from the front, else the collection's size.
    /// With one of `unless` among the later arguments (ZRANGE ... BYSCORE), the bounds are not
    /// indexes: the collection's size.
    func measuringRange(start: Int, stop: Int, unless keywords: [StaticString] = []) -> Command {
        measuringWork { _, call throws(CommandError) in
            if call.argv.dropFirst(stop + 1).contains(where: { arg in keywords.contains { arg.isKeyword($0) } }) {
                return try call.collectionSize(call[1])
            }
            guard call.count > stop, let a = Bytes.int64(call[start]), let b = Bytes.int64(call[stop]) else { return 0 }
            // Counted in UInt64: `0 9223372036854775807` spans one more than Int64 holds.
            if a >= 0 && b >= 0 { return b >= a ? UInt64(b - a) + 1 : 0 }
            return try call.collectionSize(call[1])
        }
    }
}
