import RESP

/// MIGRATE: moves keys to another server (Cairn or Redis) with DUMP and RESTORE, then deletes
/// them here unless COPY. https://redis.io/docs/latest/commands/migrate/
///
/// The keys are read and serialized first, then sent in one pipeline (AUTH, SELECT, one
/// RESTORE per key) over a `MigrationLink`, each step bounded by `timeout` milliseconds.
/// Redis blocks its only thread meanwhile; Cairn runs MIGRATE on the long-command queue and
/// holds no key lock while it waits, so a key written during a MIGRATE may be deleted after it
/// was sent with its older value (Redis cannot interleave such a write).
enum MigrateCommand {
    static let command = Command("migrate", handler: migrate).movingKeys(keys)

    /// The keys of a MIGRATE request: those after KEYS, or the key argument.
    static func keys(_ argv: [[UInt8]]) -> [[UInt8]] {
        var i = 6
        while i < argv.count {
            if argv[i].isKeyword("KEYS") { return Array(argv[(i + 1)...]) }
            i += argv[i].isKeyword("AUTH") ? 2 : argv[i].isKeyword("AUTH2") ? 3 : 1
        }
        return argv.count > 3 && !argv[3].isEmpty ? [argv[3]] : []
    }

    static func migrate(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var copy = false, replace = false
        var auth: [[UInt8]] = []
        var keys = [call[3]]
        var i = 6
        while i < call.count {
            if call[i].isKeyword("COPY") {
                copy = true
            } else if call[i].isKeyword("REPLACE") {
                replace = true
            } else if call[i].isKeyword("AUTH"), i + 1 < call.count {
                auth = [Array("AUTH".utf8), call[i + 1]]
                i += 1
            } else if call[i].isKeyword("AUTH2"), i + 2 < call.count {
                auth = [Array("AUTH".utf8), call[i + 1], call[i + 2]]
                i += 2
            } else if call[i].isKeyword("KEYS") {
                guard call[3].isEmpty else {
                    throw CommandError("ERR", "When using MIGRATE KEYS option, the key argument must be set to the empty string")
                }
                keys = Array(call.argv[(i + 1)...])
                break
            } else {
                throw .syntax
            }
            i += 1
        }
        let port = Int(call.text(2)) ?? 0
        var timeout = try call.integer(5)
        let db = try call.integer(4)
        if timeout <= 0 { timeout = 1000 }

        var requests: [UInt8] = []
        if !auth.isEmpty { requests += RESPWriter.command(auth) }
        requests += RESPWriter.command([Array("SELECT".utf8), Bytes.decimal(db)])
        var sent: [[UInt8]] = []
        for key in keys {
            guard let entry = try call.readEntry(key) else { continue }
            let payload = try DumpCommands.payload(call, of: key, entry)
            let ttl = entry.expiresAt.map { max(1, $0 - call.now) } ?? 0
            var restore = [Array("RESTORE".utf8), key, Bytes.decimal(ttl), payload]
            if replace { restore.append(Array("REPLACE".utf8)) }
            requests += RESPWriter.command(restore)
            sent.append(key)
        }
        guard !sent.isEmpty else {
            out.simpleString("NOKEY")
            return
        }

        let link: MigrationLink
        do { link = try MigrationLink(host: call.text(1), port: port, timeoutMilliseconds: Int(clamping: timeout)) } catch {
            throw CommandError("IOERR", error == .connect ? "error or timeout connecting to the client" : "error or timeout writing to target instance")
        }
        do { try link.send(requests) } catch { throw CommandError("IOERR", "error or timeout writing to target instance") }
        var failure: String? = nil
        var moved: [[UInt8]] = []
        do {
            for _ in 0..<(auth.isEmpty ? 1 : 2) {
                if case .error(let text) = try link.reply() { failure = failure ?? text }
            }
            for key in sent {
                if case .error(let text) = try link.reply() { failure = failure ?? text } else { moved.append(key) }
            }
        } catch {
            throw CommandError("IOERR", "error or timeout reading to target instance")
        }
        // The keys the target took are deleted here (unless COPY), even when others failed.
        if !copy && !moved.isEmpty {
            try call.locked(moved) { () throws(CommandError) in
                for key in moved {
                    try call.remove(key)
                    call.notify(.generic, "del", key)
                }
            }
        }
        if let failure { throw CommandError("ERR", "Target instance replied with error: \(failure)") }
        out.simpleString("OK")
    }
}
