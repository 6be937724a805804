#if canImport(Glibc)
import Glibc
#endif

/// The ACL file (`aclfile`): one `user NAME rule...` line per user, Redis's format, read at
/// start and by ACL LOAD, written by ACL SAVE. https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/#use-an-external-acl-file
enum ACLFile {
    /// The users in the file at `path`; a missing file holds none. Throws Redis's error text
    /// for the first bad line; nothing changes then.
    static func load(_ path: String) throws(CommandError) -> [ACLUser] {
        guard let bytes = readFile(path) else {
            if access(path, F_OK) != 0 { return [] }
            throw CommandError("ERR", "Error loading ACLs, opening file '\(path)': \(String(cString: strerror(errno)))")
        }
        var users: [ACLUser] = []
        for (index, raw) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            func failure(_ reason: String) -> CommandError {
                CommandError("ERR", "\(path):\(index + 1): \(reason). WARNING: ACL errors detected, no change to the ACL system was performed.")
            }
            guard words.first == "user", words.count >= 2 else { throw failure("line should start with user keyword") }
            guard !users.contains(where: { $0.name == words[1] }) else { throw failure("Duplicate user '\(words[1])' found") }
            do { users.append(try ACLUser.parse(Array(words.dropFirst()))) } catch { throw failure("\(error.reason) in '\(error.rule)'") }
        }
        return users
    }

    /// Writes `users` to `path` (atomically: a temporary file renamed over it).
    static func save(_ users: [ACLUser], to path: String) throws(CommandError) {
        let text = users.map(\.rule).joined(separator: "\n") + "\n"
        guard writeFileAtomically(path, text) else {
            throw CommandError("ERR", "There was an error trying to save the ACLs. Please check the server logs for more information")
        }
    }
}
