import RESP

/// The connection family: https://redis.io/docs/latest/commands/?group=connection
enum ConnectionCommands {
    static let all: [Command] = [
        Command("ping") { call, out throws(CommandError) in
            if call.count > 2 { throw .arity(call.name) }
            if call.session.subscriptionCount > 0 && out.version == .v2 {
                // Subscribed (RESP2): a push-shaped reply, as Redis answers.
                out.arrayHeader(2)
                out.bulk("pong")
                out.bulk(call.count == 2 ? call[1] : [])
            } else if call.count == 2 { out.bulk(call[1]) } else { out.simpleString("PONG") }
        },
        Command("echo") { call, out throws(CommandError) in
            out.bulk(call[1])
        },
        Command("quit") { call, out throws(CommandError) in
            call.session.outcome.closeAfterReply = true
            out.simpleString("OK")
        },
        Command("reset") { call, out throws(CommandError) in
            let s = call.session
            call.engine.unsubscribeAll(s)
            s.queued = nil
            s.transactionFailed = false
            s.watched = []
            s.protocolVersion = .v2
            s.family = call.engine.defaultFamily
            call.engine.logInAsDefault(s)
            s.record.state.withLock { $0.name = "" }
            out.version = .v2
            out.simpleString("RESET")
        },
        Command("auth") { call, out throws(CommandError) in
            guard call.count <= 3 else { throw .syntax }
            let user = call.count == 3 ? call.text(1) : "default"
            try authenticate(call, user: user, password: call[call.count - 1], bare: call.count == 2)
            out.simpleString("OK")
        },
        Command("hello", handler: hello),
        Command("select") { call, out throws(CommandError) in
            guard try call.int32(1) == 0 else { throw CommandError("ERR", "DB index is out of range") }
            out.simpleString("OK")
        },
        Command("client", subcommands: ClientCommands.all + [BlockingListCommands.clientUnblock]) { _, _ throws(CommandError) in },
    ]

    /// Checks a user's password (SHA-256 digests compared in constant time, see `AccessControl`)
    /// and logs the session in as that user. Failures are logged with the client's address and
    /// rate-limited per address (`auth-max-failures` a minute) and for the whole server
    /// (`auth-max-failures-total`), see `AuthThrottle`.
    static func authenticate(_ call: Call, user: String, password: [UInt8], bare: Bool) throws(CommandError) {
        let engine = call.engine
        let acl = engine.guardrails.accessControl
        if bare, let d = acl.users["default"], d.nopass {
            throw CommandError("ERR", "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
        }
        let address = call.session.record.address
        let throttle = engine.guardrails.authThrottle
        let limit = engine.guardrails.authMaxFailures.load(ordering: .relaxed)
        let total = engine.guardrails.authMaxFailuresTotal.load(ordering: .relaxed)
        let now = Clock.milliseconds()
        // WRONGPASS, so clients treat it as the failed login it is (redis-py raises AuthenticationError).
        switch throttle.block(address, perAddress: limit, total: total, now: now) {
        case .address:
            engine.logger.warning("AUTH from \(address) as '\(user)' refused: over auth-max-failures (\(limit) a minute)")
            throw CommandError("WRONGPASS", "too many failed AUTH attempts from this address; try again in a minute")
        case .server:
            engine.logger.warning("AUTH from \(address) as '\(user)' refused: over auth-max-failures-total (\(total) a minute from all addresses)")
            throw CommandError("WRONGPASS", "too many failed AUTH attempts on this server (auth-max-failures-total); try again in a minute")
        case nil:
            break
        }
        guard let account = acl.check(user: user, password: password) else {
            let failures = throttle.recordFailure(address, now: now)
            engine.logger.warning("failed AUTH from \(address) as '\(user)' (\(failures) this minute)")
            engine.guardrails.log.add(reason: "auth", context: call.session.inTransaction ? "multi" : "toplevel", object: Array("AUTH".utf8),
                                      user: user, client: call.session.record.line(now: now))
            throw .wrongPass
        }
        call.session.logIn(account)
    }

    /// HELLO: https://redis.io/docs/latest/commands/hello/
    static func hello(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var version = call.session.protocolVersion
        var i = 1
        if call.count >= 2 {
            guard let v = Bytes.int64(call[1]) else {
                throw CommandError("ERR", "Protocol version is not an integer or out of range")
            }
            guard v == 2 || v == 3 else { throw CommandError("NOPROTO", "unsupported protocol version") }
            version = v == 3 ? .v3 : .v2
            i = 2
        }
        var name: [UInt8]? = nil
        while i < call.count {
            if call[i].isKeyword("AUTH"), i + 2 < call.count {
                try authenticate(call, user: call.text(i + 1), password: call[i + 2], bare: false)
                i += 3
            } else if call[i].isKeyword("SETNAME"), i + 1 < call.count {
                name = call[i + 1]
                try ClientCommands.checkName(name!)
                i += 2
            } else {
                throw CommandError("ERR", "Syntax error in HELLO option '\(call.text(i))'")
            }
        }
        guard call.session.authenticated else { throw .noAuth }
        call.session.protocolVersion = version
        out.version = version
        if let name { call.session.record.state.withLock { $0.name = Bytes.text(name) } }
        out.mapHeader(7)
        out.bulk("server"); out.bulk("redis")
        out.bulk("version"); out.bulk(ServerCommands.redisVersion)
        out.bulk("proto"); out.integer(version.rawValue)
        out.bulk("id"); out.integer(call.session.id)
        out.bulk("mode"); out.bulk("standalone")
        out.bulk("role"); out.bulk(call.engine.replication.isReplica ? "replica" : "master")
        out.bulk("modules"); out.arrayHeader(0)
    }
}

/// CLIENT subcommands: https://redis.io/docs/latest/commands/client/
enum ClientCommands {
    static let all: [Command] = [
        Command("client|id") { call, out throws(CommandError) in
            out.integer(call.session.id)
        },
        Command("client|setname") { call, out throws(CommandError) in
            try checkName(call[2])
            call.session.record.state.withLock { $0.name = call.text(2) }
            out.simpleString("OK")
        },
        Command("client|getname") { call, out throws(CommandError) in
            let name = call.session.record.name
            if name.isEmpty { out.null() } else { out.bulk(name) }
        },
        Command("client|setinfo") { call, out throws(CommandError) in
            let value = call.text(3)
            if value.contains(where: { $0 == " " || $0 == "\n" }) {
                throw CommandError("ERR", "\(call.text(2)) cannot contain spaces, newlines or special characters.")
            }
            if call[2].isKeyword("LIB-NAME") {
                call.session.record.state.withLock { $0.libName = value }
            } else if call[2].isKeyword("LIB-VER") {
                call.session.record.state.withLock { $0.libVersion = value }
            } else {
                throw CommandError("ERR", "Unrecognized option '\(call.text(2))'")
            }
            out.simpleString("OK")
        },
        Command("client|list") {
            call, out throws(CommandError) in
            var ids: Set<Int64>? = nil
            var i = 2
            while i < call.count {
                if call[i].isKeyword("ID"), i + 1 < call.count {
                    var set = Set<Int64>()
                    for j in (i + 1)..<call.count { set.insert(try call.integer(j, in: Int64.min...Int64.max, message: "Invalid client ID")) }
                    ids = set
                    break
                } else if call[i].isKeyword("TYPE"), i + 1 < call.count {
                    i += 2
                } else {
                    throw .syntax
                }
            }
            let now = Clock.milliseconds()
            let lines = call.engine.clients.all.filter { ids?.contains($0.id) ?? true }.map { $0.line(now: now) + "\n" }
            out.verbatim(Array(lines.joined().utf8))
        },
        Command("client|info") { call, out throws(CommandError) in
            out.verbatim(Array((call.session.record.line(now: Clock.milliseconds()) + "\n").utf8))
        },
        Command("client|kill", handler: kill),
        Command("client|no-evict") { call, out throws(CommandError) in
            guard call[2].isKeyword("ON") || call[2].isKeyword("OFF") else { throw .syntax }
            out.simpleString("OK")
        },
        Command("client|no-touch") {
            call, out throws(CommandError) in
            guard call[2].isKeyword("ON") || call[2].isKeyword("OFF") else { throw .syntax }
            out.simpleString("OK")
        },
        Command("client|capa") { _, out throws(CommandError) in
            out.simpleString("OK")
        },
        Command("client|pause") {
            call, out throws(CommandError) in
            guard call.count <= 4 else {
                throw CommandError("ERR", "unknown subcommand or wrong number of arguments for '\(call.text(1))'. Try CLIENT HELP.")
            }
            // The mode before the timeout, as Redis checks them.
            var all = true
            if call.count == 4 {
                if call[3].isKeyword("WRITE") { all = false }
                else if !call[3].isKeyword("ALL") { throw CommandError("ERR", "CLIENT PAUSE mode must be WRITE or ALL") }
            }
            let timeout = try call.timeout(2, .milliseconds)
            // Differs from Redis 7.0, whose end time wraps past the 64-bit range into the past
            // (OK, and no pause): refused as Redis 7.2 does, rather than pausing forever.
            let (end, overflow) = Clock.milliseconds().addingReportingOverflow(timeout)
            guard !overflow else { throw CommandError("ERR", "timeout is out of range") }
            call.engine.pause.pause(until: end, all: all)
            out.simpleString("OK")
        },
        Command("client|unpause") { call, out throws(CommandError) in
            call.engine.pause.unpause()
            out.simpleString("OK")
        },
    ]

    static func checkName(_ name: [UInt8]) throws(CommandError) {
        if name.contains(where: { $0 < 33 || $0 > 126 }) {
            throw CommandError("ERR", "Client names cannot contain spaces, newlines or special characters.")
        }
    }

    static func kill(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let clients = call.engine.clients.all
        if call.count == 3 {
            let addr = call.text(2)
            guard let target = clients.first(where: { $0.address == addr }) else { throw CommandError("ERR", "No such client") }
            target.kill()
            out.simpleString("OK")
            return
        }
        var id: Int64? = nil, addr: String? = nil, laddr: String? = nil, type: String? = nil, user: String? = nil, maxAge: Int64? = nil
        var skipMe = true
        var i = 2
        while i + 1 < call.count {
            let value = call.text(i + 1)
            // Each filter's value checked as Redis 7 does: a filter that matches nothing must
            // not quietly match everyone instead.
            if call[i].isKeyword("ID") {
                id = try call.integer(i + 1, in: 1...Int64.max, message: "client-id should be greater than 0")
            }
            else if call[i].isKeyword("ADDR") { addr = value }
            else if call[i].isKeyword("LADDR") { laddr = value }
            else if call[i].isKeyword("SKIPME") {
                switch value.lowercased() {
                case "yes": skipMe = true
                case "no": skipMe = false
                default: throw .syntax
                }
            }
            else if call[i].isKeyword("TYPE") {
                let t = value.lowercased()
                guard ["normal", "master", "replica", "slave", "pubsub"].contains(t) else { throw CommandError("ERR", "Unknown client type '\(value)'") }
                type = t == "slave" ? "replica" : t
            }
            else if call[i].isKeyword("USER") {
                guard call.engine.guardrails.accessControl.users[value] != nil else { throw CommandError("ERR", "No such user '\(value)'") }
                user = value
            }
            else if call[i].isKeyword("MAXAGE") {
                guard let n = Bytes.int64(call[i + 1]) else { throw CommandError("ERR", "maxage is not an integer or out of range") }
                guard n > 0 else { throw .syntax }
                maxAge = n
            }
            else { throw .syntax }
            i += 2
        }
        guard i == call.count else { throw .syntax }
        var killed = 0
        for c in clients {
            if let id, c.id != id { continue }
            if let addr, c.address != addr { continue }
            if let laddr, c.localAddress != laddr { continue }
            if skipMe && c.id == call.session.id { continue }
            if let type, c.state.withLock({ $0.type }) != type { continue }
            if let user, c.state.withLock({ $0.user }) != user { continue }
            if let maxAge, (Clock.milliseconds() - c.createdAt) / 1000 < maxAge { continue }
            c.kill()
            killed += 1
        }
        out.integer(killed)
    }
}
