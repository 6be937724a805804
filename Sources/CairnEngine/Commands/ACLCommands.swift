import RESP

/// ACL: users, their passwords, commands, key and channel patterns, managed at run time.
/// https://redis.io/docs/latest/commands/acl/
///
/// Users come from `user` lines of `cairn.conf` or from the `aclfile`; ACL SETUSER and
/// DELUSER change them at once for every connection (`Guardrails.modify`); ACL SAVE writes
/// them to the `aclfile`, CONFIG REWRITE to the config file when there is none. Passwords are
/// never printed, only their SHA-256 digests (`#<hex>`), as Redis does.
enum ACLCommands {
    static let all: [Command] = [
        Command("acl", subcommands: subcommands) { _, _ throws(CommandError) in },
    ]

    static let subcommands: [Command] = [
        Command("acl|whoami") { call, out throws(CommandError) in
            out.bulk(call.session.user)
        },
        Command("acl|users") { call, out throws(CommandError) in
            let users = call.engine.guardrails.accessControl.sorted
            out.arrayHeader(users.count)
            for u in users { out.bulk(u.name) }
        },
        Command("acl|list") { call, out throws(CommandError) in
            let users = call.engine.guardrails.accessControl.sorted
            out.arrayHeader(users.count)
            for u in users { out.bulk(u.rule) }
        },
        Command("acl|cat") {
            call, out throws(CommandError) in
            guard call.count <= 3 else { throw .arity(call.name) }
            guard call.count == 3 else {
                out.arrayHeader(ACLCategories.names.count)
                for name in ACLCategories.names { out.bulk(name) }
                return
            }
            guard let category = ACLCategories.named(call.text(2)) else {
                throw CommandError("ERR", "Unknown category '\(call.text(2))'")
            }
            let names = category.commandNames(in: call.engine.table)
            out.arrayHeader(names.count)
            for n in names { out.bulk(n) }
        },
        Command("acl|setuser", handler: setUser),
        Command("acl|deluser", handler: delUser),
        Command("acl|getuser", handler: getUser),
        Command("acl|genpass") {
            call, out throws(CommandError) in
            guard call.count <= 3 else { throw .arity(call.name) }
            var bits = 256
            if call.count == 3 {
                guard let n = Bytes.int64(call[2]), n > 0, n <= 4096 else {
                    throw CommandError("ERR", "ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
                }
                bits = Int(n)
            }
            var rng = SystemRandomNumberGenerator()
            let digits = Array("0123456789abcdef")
            out.bulk(String((0..<(bits + 3) / 4).map { _ in digits[Int(rng.next() & 15)] }))
        },
        Command("acl|log") {
            call, out throws(CommandError) in
            guard call.count <= 3 else { throw .arity(call.name) }
            let log = call.engine.guardrails.log
            if call.count == 3 && call[2].isKeyword("RESET") {
                log.reset()
                out.simpleString("OK")
                return
            }
            // Redis's default of 10 entries; a negative count lists nothing.
            let count = try call.count == 3 ? Int(clamping: max(call.integer(2), 0)) : 10
            log.write(count: count, to: &out)
        },
        Command("acl|save") { call, out throws(CommandError) in
            let path = try aclfile(call)
            try ACLFile.save(call.engine.guardrails.accessControl.sorted, to: path)
            out.simpleString("OK")
        },
        Command("acl|load") { call, out throws(CommandError) in
            let path = try aclfile(call)
            let users = try ACLFile.load(path)
            // As at start: a file without a default user gets the built-in one, and
            // `requirepass` (if set) stays its password.
            let fresh = AccessControl(users: users, requirepass: call.engine.configuration.requirepass)
            let removed = call.engine.guardrails.change { (acl: inout AccessControl) -> [String] in
                let gone = acl.users.keys.filter { fresh.users[$0] == nil }
                acl = fresh
                return gone
            }
            disconnect(removed, call)
            out.simpleString("OK")
        },
        Command("acl|dryrun", handler: dryRun),
        DiagnosticCommands.helpCommand("ACL", [
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ]),
    ]

    static func aclfile(_ call: Call) throws(CommandError) -> String {
        let path = call.engine.configuration.aclfile
        guard !path.isEmpty else {
            throw CommandError("ERR", "This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
        }
        return path
    }

    static func setUser(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let name = call.text(2)
        let rules = (3..<call.count).map { call.text($0) }
        try call.engine.guardrails.modify { (acl: inout AccessControl) throws(CommandError) in
            var user = acl.users[name] ?? ACLUser(name: name)
            for rule in rules {
                do throws(ACLUser.RuleError) { try user.apply(rule) } catch { throw CommandError("ERR", error.message) }
            }
            acl.users[name] = user
        }
        out.simpleString("OK")
    }

    static func delUser(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let names = (2..<call.count).map { call.text($0) }
        if names.contains("default") { throw CommandError("ERR", "The 'default' user cannot be removed") }
        let removed = call.engine.guardrails.change { (acl: inout AccessControl) -> [String] in
            names.filter { acl.users.removeValue(forKey: $0) != nil }
        }
        disconnect(removed, call)
        out.integer(removed.count)
    }

    /// Closes the connections logged in as `users` (deleted), as Redis does.
    static func disconnect(_ users: [String], _ call: Call) {
        guard !users.isEmpty else { return }
        let names = Set(users)
        for client in call.engine.clients.all where names.contains(client.state.withLock({ $0.user })) {
            if client.id == call.session.id { call.session.outcome.closeAfterReply = true } else { client.kill() }
        }
    }

    static func getUser(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard let user = call.engine.guardrails.accessControl.users[call.text(2)] else {
            out.null()
            return
        }
        out.mapHeader(6)
        out.bulk("flags")
        let flags = [user.enabled ? "on" : "off"] + (user.nopass ? ["nopass"] : [])
        out.setHeader(flags.count)  // a set in RESP3, as Redis answers
        for f in flags { out.bulk(f) }
        out.bulk("passwords")
        out.arrayHeader(user.passwordHashes.count)
        for h in user.passwordHashes { out.bulk(ACLUser.hexString(h)) }
        out.bulk("commands"); out.bulk(user.commandsText)
        out.bulk("keys"); out.bulk(user.keysText)
        out.bulk("channels"); out.bulk(user.channelsText)
        out.bulk("selectors"); out.arrayHeader(0)
    }

    static func dryRun(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard let user = call.engine.guardrails.accessControl.users[call.text(2)] else {
            throw CommandError("ERR", "User '\(call.text(2))' not found")
        }
        let argv = Array(call.argv[3...])
        let command: Command
        switch call.engine.lookup(argv, first: argv[0]) {
        case .success(let c): command = c
        case .failure(let error):
            if call.engine.table.command(named: argv[0]) == nil {
                throw CommandError("ERR", "Command '\(Bytes.text(argv[0]))' not found")
            }
            throw error
        }
        switch Guardrails.denial(command, argv, user: user, session: call.session) {
        case nil: out.simpleString("OK")
        case .command: out.bulk("This user has no permissions to run the '\(command.name)' command")
        case .key(let k): out.bulk("This user has no permissions to access the '\(Bytes.text(k))' key")
        case .channel(let c): out.bulk("This user has no permissions to access the '\(Bytes.text(c))' channel")
        }
    }
}
