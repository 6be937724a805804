import RESP

/// ACL subcommands Cairn has: https://redis.io/docs/latest/commands/acl/
///
/// Users come from `cairn.conf` (`user` lines, see `ACLUser`); there is no ACL SETUSER or
/// ACL SAVE: change the file and restart. Passwords are never printed, only their SHA-256
/// digests (`#<hex>`), as Redis does.
enum ACLCommands {
    static let all: [Command] = [
        Command("acl", arity: -2, group: "server", since: "6.0.0", summary: "A container for Access List Control commands.",
                subcommands: subcommands) { _, _ throws(CommandError) in },
    ]

    static let subcommands: [Command] = [
        Command("acl|whoami", arity: 2, flags: [.fast], group: "server", since: "6.0.0",
                summary: "Returns the authenticated username of the current connection.") { call, out throws(CommandError) in
            out.bulk(call.session.user)
        },
        Command("acl|users", arity: 2, flags: [.admin], group: "server", since: "6.0.0",
                summary: "Lists all ACL users.") { call, out throws(CommandError) in
            let users = call.engine.guardrails.accessControl.sorted
            out.arrayHeader(users.count)
            for u in users { out.bulk(u.name) }
        },
        Command("acl|list", arity: 2, flags: [.admin], group: "server", since: "6.0.0",
                summary: "Dumps the effective rules in ACL file format (passwords as SHA-256 digests).") { call, out throws(CommandError) in
            let users = call.engine.guardrails.accessControl.sorted
            out.arrayHeader(users.count)
            for u in users { out.bulk(u.rule) }
        },
        Command("acl|cat", arity: -2, group: "server", since: "6.0.0",
                summary: "Lists the ACL categories, or the commands inside a category.", arguments: "[category]") {
            call, out throws(CommandError) in
            guard call.count <= 3 else { throw .arity(call.name) }
            guard call.count == 3 else {
                out.arrayHeader(CommandCategories.named.count)
                for (name, _) in CommandCategories.named { out.bulk(name) }
                return
            }
            let wanted = Bytes.lowercased(call[2])
            guard let category = CommandCategories.named.first(where: { $0.0 == wanted })?.1 else {
                throw CommandError("ERR", "Unknown category '\(call.text(2))'")
            }
            var names: [String] = []
            for c in call.engine.table.sorted {
                let members = c.subcommands.isEmpty ? [c] : c.subcommands.values.sorted { $0.name < $1.name }
                names += members.filter { CommandCategories.required(by: $0.flags) == category }.map(\.name)
            }
            out.arrayHeader(names.count)
            for n in names { out.bulk(n) }
        },
    ]
}
