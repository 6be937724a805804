import RESP

extension BlockingListCommands {
    /// CLIENT UNBLOCK: https://redis.io/docs/latest/commands/client-unblock/
    /// Ends another client's blocking pop: 1 when it was blocked, 0 otherwise. TIMEOUT (the
    /// default) answers it as a timeout would, ERROR with `-UNBLOCKED`.
    static let clientUnblock = Command("client|unblock") { call, out throws(CommandError) in
        let id = try call.integer(2)
        var withError = false
        if call.count == 4 {
            if call[3].isKeyword("ERROR") {
                withError = true
            } else if !call[3].isKeyword("TIMEOUT") {
                throw CommandError("ERR", "CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
            }
        } else if call.count > 4 {
            throw CommandError("ERR", "unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.")
        }
        out.integer(call.engine.blocking.unblock(id, withError: withError) ? 1 : 0)
    }
}
