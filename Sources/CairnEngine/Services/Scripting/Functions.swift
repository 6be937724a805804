import Rocks

/// The libraries as last read from the database and run in the Lua state.
struct LoadedLibraries {
    var set = LibrarySet()
    /// The database they were read from; another one (after an online restore or a reopen)
    /// means they are read again.
    weak var database: Database?
    var loaded = false
}

/// Function libraries, persistent: each library's code is one entry of the hidden
/// `cairn.meta` family, `function:<library name>` → code, written by the command that changes
/// it as a normal write batch (through the WAL, so it survives `kill -9` and reaches anything
/// that follows the WAL). The Lua state runs the stored code on first use after a start or a
/// database swap (`libraries(_:)`). Every change happens under the Lua state's lock: no
/// function runs while its library changes.
extension Scripting {
    static let libraryKeyPrefix = Array("function:".utf8)
    /// The first key after every `function:` key.
    static let libraryKeyEnd = Array("function;".utf8)

    static func libraryKey(_ name: String) -> [UInt8] { libraryKeyPrefix + Array(name.utf8) }

    /// The libraries now (read and run first if needed).
    func libraries(_ engine: Engine) throws(CommandError) -> LibrarySet {
        let database = engine.database
        if let set = libraries.withLock({ $0.loaded && $0.database === database ? $0.set : nil }) { return set }
        return try lua.withLock { (state: inout LuaState) throws(CommandError) in try loaded(engine, state) }
    }

    /// Under `lua`'s lock: the libraries, read from the database and run unless that was done
    /// for the database open now. A stored library that no longer loads is logged and skipped.
    private func loaded(_ engine: Engine, _ state: LuaState) throws(CommandError) -> LibrarySet {
        let database = engine.database
        if let set = libraries.withLock({ $0.loaded && $0.database === database ? $0.set : nil }) { return set }
        let stored = try engine.storage("reading the function libraries") { () throws -> [[UInt8]] in
            guard let meta = database.family(named: Engine.metaFamilyName) else { return [] }
            return try database.entries(withPrefix: Scripting.libraryKeyPrefix, in: meta).map(\.value)
        }
        state.removeAllLibraries()
        var set = LibrarySet()
        for code in stored {
            do throws(CommandError) {
                let (name, body) = try FunctionLibrary.parseShebang(code)
                let library = try state.stage(name, code: code, body: body)
                try set.add([library], replace: false, quotedLibraryName: true)
                state.commit([name])
            } catch {
                state.discardStaged()
                engine.logger.error("a function library stored in the database does not load: \(error.wire)")
            }
        }
        publish(set, from: database)
        return set
    }

    /// The stored libraries changed under the Lua state (a replica applied its primary's
    /// FUNCTION LOAD or DELETE): they are read and run again on next use.
    func librariesChanged() {
        libraries.withLock { $0.loaded = false }
    }

    private func publish(_ set: LibrarySet, from database: Database) {
        libraries.withLock { $0 = LoadedLibraries(set: set, database: database, loaded: true) }
    }

    /// Writes one change of the stored libraries as one batch: every library removed first
    /// (`removeAll`), `removed` deleted, `written` put.
    private func persist(_ engine: Engine, written: [FunctionLibrary], removed: [String] = [], removeAll: Bool = false) throws(CommandError) {
        let database = engine.database
        try engine.storage("changing the function libraries") { () throws in
            guard let meta = database.family(named: Engine.metaFamilyName) else {
                throw CommandError("ERR", "the database has no metadata family")
            }
            var batch = WriteBatch()
            if removeAll { batch.deleteRange(from: Scripting.libraryKeyPrefix, to: Scripting.libraryKeyEnd, in: meta) }
            for name in removed { batch.delete(Scripting.libraryKey(name), in: meta) }
            for library in written { batch.put(Scripting.libraryKey(library.name), library.code, in: meta) }
            try database.write(batch, options: WriteOptions(sync: true))
        }
    }

    // MARK: changes

    /// FUNCTION LOAD [REPLACE]: the library's name.
    func loadLibrary(_ engine: Engine, code: [UInt8], replace: Bool) throws(CommandError) -> String {
        let (name, body) = try FunctionLibrary.parseShebang(code)
        return try lua.withLock { (state: inout LuaState) throws(CommandError) -> String in
            var set = try loaded(engine, state)
            if !replace && set.byName[name] != nil { throw CommandError("ERR", "Library '\(name)' already exists") }
            do throws(CommandError) {
                let library = try state.stage(name, code: code, body: body)
                try set.add([library], replace: replace, quotedLibraryName: true)
                try persist(engine, written: [library])
            } catch {
                state.discardStaged()
                throw error
            }
            state.commit([name])
            publish(set, from: engine.database)
            return name
        }
    }

    /// FUNCTION DELETE.
    func deleteLibrary(_ engine: Engine, name: String) throws(CommandError) {
        try lua.withLock { (state: inout LuaState) throws(CommandError) in
            var set = try loaded(engine, state)
            guard set.byName[name] != nil else { throw CommandError("ERR", "Library not found") }
            try persist(engine, written: [], removed: [name])
            set.remove(name)
            state.removeLibrary(name)
            publish(set, from: engine.database)
        }
    }

    /// FUNCTION FLUSH.
    func flushLibraries(_ engine: Engine) throws(CommandError) {
        try lua.withLock { (state: inout LuaState) throws(CommandError) in
            try persist(engine, written: [], removeAll: true)
            state.removeAllLibraries()
            publish(LibrarySet(), from: engine.database)
        }
    }

    enum RestorePolicy { case append, replace, flush }

    /// FUNCTION RESTORE: every library of the payload is run and checked before anything
    /// changes; then they are stored and made callable together.
    func restoreLibraries(_ engine: Engine, payload: [UInt8], policy: RestorePolicy) throws(CommandError) {
        let codes = try FunctionPayload.decode(payload)
        try lua.withLock { (state: inout LuaState) throws(CommandError) in
            var set = try loaded(engine, state)
            var incoming = LibrarySet()
            var libraries: [FunctionLibrary] = []
            do throws(CommandError) {
                for code in codes {
                    let (name, body) = try FunctionLibrary.parseShebang(code)
                    let library = try state.stage(name, code: code, body: body)
                    try incoming.add([library], replace: false, quotedLibraryName: true)
                    libraries.append(library)
                }
                if policy == .flush { set = LibrarySet() }
                try set.add(libraries, replace: policy == .replace, quotedLibraryName: false)
                try persist(engine, written: libraries, removeAll: policy == .flush)
            } catch {
                state.discardStaged()
                throw error
            }
            state.commit(libraries.map(\.name), replacingAll: policy == .flush)
            publish(set, from: engine.database)
        }
    }
}
