import RESP
import Rocks

/// Backups, restore and checkpoints: Cairn's own commands plus Redis's BGSAVE (LASTSAVE is in
/// ServerCommands). Work is in `Backups`.
///
/// - `BACKUP.CREATE` → id: flushes and backs up (incremental), then applies `backup-keep` and
///   `backup-max-age`.
/// - `BACKUP.LIST` → one map per backup, oldest first: id, time (Unix seconds), size (bytes),
///   files.
/// - `BACKUP.VERIFY id [QUICK]` → OK, or an error when a file is missing, has the wrong size or
///   (unless QUICK) the wrong checksum.
/// - `BACKUP.PURGE keep` → the number of backups deleted (all but the newest `keep`).
/// - `BACKUP.RESTORE id|LATEST` → OK once the database is restored and reopened, online.
/// - `BGSAVE [SCHEDULE]` (https://redis.io/docs/latest/commands/bgsave/): a backup in the
///   background; LASTSAVE moves when it succeeds.
/// - `CHECKPOINT dir` → OK: an openable copy in a new directory, hard-linking table files.
///
/// All are admin commands. They run off the connection's queue (`Call.deferReply`), so other
/// clients are served meanwhile; the issuing client's next request waits for the reply.
enum BackupCommands {
    static let all: [Command] = [
        Command("backup.create") { call, out throws(CommandError) in
            let engine = call.engine
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                w.integer(Int64(try engine.backups.create(engine).id))
            }
        }.reachingEverything(write: false),
        Command("backup.list") { call, out throws(CommandError) in
            let engine = call.engine
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                let all = try engine.backups.list(engine)
                w.arrayHeader(all.count)
                for b in all {
                    w.mapHeader(4)
                    w.bulk("id"); w.integer(Int64(b.id))
                    w.bulk("time"); w.integer(b.timestamp)
                    w.bulk("size"); w.integer(Int64(b.size))
                    w.bulk("files"); w.integer(Int64(b.fileCount))
                }
            }
        },
        Command("backup.verify") { call, out throws(CommandError) in
            let id = try backupID(call, 1)
            guard call.count == 2 || (call.count == 3 && call[2].isKeyword("QUICK")) else { throw .syntax }
            let quick = call.count == 3
            let engine = call.engine
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                try engine.backups.verify(engine, id: id, quick: quick)
                w.simpleString("OK")
            }
        },
        Command("backup.purge") { call, out throws(CommandError) in
            let keep = try call.integer(1)
            guard keep >= 0 && keep <= Int64(UInt32.max) else { throw CommandError("ERR", "keep must be 0 or more") }
            let engine = call.engine
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                w.integer(Int64(try engine.backups.purge(engine, keeping: Int(keep))))
            }
        },
        Command("backup.restore") { call, out throws(CommandError) in
            guard call.session.transaction == nil else {
                throw CommandError("ERR", "BACKUP.RESTORE cannot run inside MULTI")
            }
            let id: UInt32? = call[1].isKeyword("LATEST") ? nil : try backupID(call, 1)
            let engine = call.engine
            let session = call.session
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                try engine.backups.restore(engine, id: id, caller: session)
                w.simpleString("OK")
            }
        }.reachingEverything(write: true),
        Command("bgsave") { call, out throws(CommandError) in
            guard call.count == 1 || (call.count == 2 && call[1].isKeyword("SCHEDULE")) else { throw .syntax }
            let engine = call.engine
            if engine.backups.startBackground(engine, reason: "BGSAVE") {
                out.simpleString("Background saving started")
            } else if call.count == 2 {
                // Redis queues it after the running one; here the running one is as recent.
                out.simpleString("Background saving scheduled")
            } else {
                throw CommandError("ERR", "Background save already in progress")
            }
        }.reachingEverything(write: false),
        Command("checkpoint") { call, out throws(CommandError) in
            let directory = call.text(1)
            guard !directory.isEmpty else { throw CommandError("ERR", "CHECKPOINT needs a directory") }
            let engine = call.engine
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                try engine.backups.checkpoint(engine, to: directory)
                w.simpleString("OK")
            }
        }.reachingEverything(write: false),
    ]

    static func backupID(_ call: Call, _ i: Int) throws(CommandError) -> UInt32 {
        guard let v = Bytes.int64(call[i]), v > 0, v <= Int64(UInt32.max) else {
            throw CommandError("ERR", "invalid backup id '\(call.text(i))'")
        }
        return UInt32(v)
    }
}

extension Call {
    /// Runs `work` off the connection's queue when the server can (the reply, and this client's
    /// later requests, wait; other clients are served meanwhile), inline otherwise (in-process
    /// use, inside EXEC).
    func deferReply(_ out: inout RESPWriter, _ work: @escaping @Sendable (inout RESPWriter) throws(CommandError) -> Void) {
        let engine = self.engine
        let run: @Sendable (inout RESPWriter) -> Void = { w in
            do throws(CommandError) { try work(&w) } catch { engine.reply(error, to: &w) }
        }
        if session.canDefer && session.transaction == nil && session.outcome.deferred == nil {
            session.outcome.deferred = run
        } else {
            run(&out)
        }
    }
}
