import CairnCLIKit
import CairnClient
import Foundation
import RESP

// The admin subcommands (AdminCommand): typed CairnClient calls, printed to read well.
extension Session {
    func run(_ admin: AdminCommand) async -> Int32 {
        if case .migrate(let from, let to, let batch) = admin { return migrate(from: from, to: to, batch: batch) }
        do {
            try await execute(admin)
            return 0
        } catch let e as CairnClientError where e.code == .server {
            Output.reply(.error(e.description), format)
            return 1
        } catch {
            return report(error)
        }
    }

    private func execute(_ admin: AdminCommand) async throws {
        let target = client.columnFamily(family)
        switch admin {
        case .migrate:
            break  // run by `run(_:)`: it has its own connections and exit status
        case .backupCreate:
            let id = try await target.backupCreate()
            print(id, standard: "Backup \(id) created", json: "{\"id\":\(id)}")
        case .backupList:
            printBackups(try await target.backups())
        case .backupVerify(let id, let quick):
            try await target.backupVerify(id, quick: quick)
            print("OK", standard: "Backup \(id) verified: every file present with its \(quick ? "size" : "checksum")",
                  json: "{\"id\":\(id),\"verified\":true}")
        case .backupRestore(let id):
            if let id { try await target.backupRestore(id) } else { try await target.backupRestoreLatest() }
            let name = id.map { "backup \($0)" } ?? "the newest backup"
            print("OK", standard: "Restored \(name)", json: "{\"restored\":\(id.map(String.init) ?? "\"latest\"")}")
        case .backupPurge(let keep):
            let deleted = try await target.backupPurge(keep: keep)
            print(deleted, standard: "Deleted \(deleted) backup\(deleted == 1 ? "" : "s"), kept the newest \(keep)",
                  json: "{\"deleted\":\(deleted),\"kept\":\(keep)}")
        case .info(let section):
            let info = try await target.info(section)
            if format == .json {
                Output.out(ReplyFormatter.format(Self.infoValue(info), as: .json))
            } else {
                Output.out(info.text.replacingOccurrences(of: "\r\n", with: "\n"))
            }
        case .scan(let match, let count, let type, let scanFamily):
            let source = scanFamily.map { client.columnFamily($0) } ?? target
            var cursor = "0"
            var all: [RESPValue] = []
            repeat {
                let page = try await source.scan(cursor: cursor, match: match, count: count, type: type)
                if format == .json {
                    all += page.keys.map { .bulkString($0) }
                } else {
                    for key in page.keys { Output.out(key + [10]) }
                }
                cursor = page.cursor
            } while cursor != "0"
            if format == .json { Output.out(ReplyFormatter.format(.array(all), as: .json)) }
        case .range(let start, let end, let reverse, let limit, let keysOnly, let rangeFamily):
            let source = rangeFamily.map { client.columnFamily($0) } ?? target
            let low = Self.bound(start), high = Self.bound(end)
            var all: [RESPValue] = []
            func emit(_ entry: KeyValue) {
                switch format {
                case .json:
                    all.append(keysOnly ? .bulkString(entry.key) : .map([(.bulkString(Array("key".utf8)), .bulkString(entry.key)),
                                                                       (.bulkString(Array("value".utf8)), .bulkString(entry.value))]))
                case .raw: Output.out(keysOnly ? entry.key + [10] : entry.key + [9] + entry.value + [10])
                case .standard:
                    Output.out(ReplyFormatter.quoted(entry.key) + (keysOnly ? "" : " => " + ReplyFormatter.quoted(entry.value)) + "\n")
                }
            }
            if let limit {
                for entry in try await source.range(low, high, reverse: reverse, limit: limit) { emit(entry) }
            } else {
                for try await entry in source.entries(from: low, to: high, reverse: reverse, pageSize: 1000) { emit(entry) }
            }
            if format == .json { Output.out(ReplyFormatter.format(.array(all), as: .json)) }
        }
    }

    /// Prints a result: `raw` in raw mode, `standard` on a terminal, `json` with --json.
    private func print(_ raw: some CustomStringConvertible, standard: String, json: String) {
        switch format {
        case .raw: Output.out("\(raw)\n")
        case .standard: Output.out(standard + "\n")
        case .json: Output.out(json + "\n")
        }
    }

    private func printBackups(_ backups: [BackupEntry]) {
        switch format {
        case .json:
            let items: [RESPValue] = backups.map { b in
                .map([("id", .integer(b.id)), ("time", b.timestamp.map(RESPValue.integer) ?? .null),
                      ("size", b.size.map(RESPValue.integer) ?? .null), ("files", b.fileCount.map(RESPValue.integer) ?? .null)]
                    .map { (key: .bulkString(Array($0.0.utf8)), value: $0.1) })
            }
            Output.out(ReplyFormatter.format(.array(items), as: .json))
        case .raw:
            for b in backups {
                Output.out("\(b.id)\t\(b.timestamp.map(String.init) ?? "")\t\(b.size.map(String.init) ?? "")\t\(b.fileCount.map(String.init) ?? "")\n")
            }
        case .standard:
            guard !backups.isEmpty else { return Output.out("No backups.\n") }
            var rows = [["ID", "CREATED (UTC)", "SIZE", "FILES"]]
            for b in backups {
                rows.append([String(b.id), b.timestamp.map(Self.utc) ?? "-", b.size.map(Self.humanSize) ?? "-", b.fileCount.map(String.init) ?? "-"])
            }
            let widths = (0..<4).map { c in rows.map { $0[c].count }.max()! }
            for row in rows {
                let cells = row.enumerated().map { c, text in text + String(repeating: " ", count: widths[c] - text.count) }
                Output.out(cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n")
            }
        }
    }

    private static func utc(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    private static func humanSize(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes), unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// INFO as a map of sections to maps of fields; integer fields as integers.
    private static func infoValue(_ info: ServerInfo) -> RESPValue {
        .map(info.sections.keys.sorted().map { name in
            let fields = info.sections[name]!.keys.sorted().map { field -> (key: RESPValue, value: RESPValue) in
                let text = info.sections[name]![field]!
                return (.bulkString(Array(field.utf8)), Int64(text).map(RESPValue.integer) ?? .bulkString(Array(text.utf8)))
            }
            return (key: .bulkString(Array(name.utf8)), value: .map(fields))
        })
    }

    private static func bound(_ text: String) -> RangeBound {
        let b = RangeBoundText.parse(text)
        guard let key = b.key else { return .unbounded }
        return b.inclusive ? .inclusive(key) : .exclusive(key)
    }
}
