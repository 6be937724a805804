/// A Redis 7 function library: its name, its code (shebang included, as FUNCTION LIST
/// WITHCODE and FUNCTION DUMP give it back) and the functions its code registered.
/// https://redis.io/docs/latest/develop/interact/programmability/functions-intro/
struct FunctionLibrary: Equatable, Sendable {
    let name: String
    let code: [UInt8]
    let functions: [LibraryFunction]
}

/// One function a library registered with `redis.register_function`.
struct LibraryFunction: Equatable, Sendable {
    let name: String
    /// nil when none was given (FUNCTION LIST answers null).
    let description: String?
    /// In Redis's order: no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys.
    let flags: [String]

    var noWrites: Bool { flags.contains("no-writes") }
}

extension FunctionLibrary {
    /// The `#!lua name=<library>` first line of a library's code: the library's name and the
    /// code with that line emptied (line numbers in errors stay the code's own). Redis 7.0's
    /// checks, in its order, with its texts.
    static func parseShebang(_ code: [UInt8]) throws(CommandError) -> (name: String, body: [UInt8]) {
        guard code.starts(with: Array("#!".utf8)) else { throw CommandError("ERR", "Missing library metadata") }
        guard let end = code.firstIndex(of: UInt8(ascii: "\n")) else { throw CommandError("ERR", "Invalid library metadata") }
        let words = code[2..<end].split(whereSeparator: { $0 == 32 || $0 == 9 || $0 == 13 }).map { Bytes.text(Array($0)) }
        guard let engine = words.first else { throw CommandError("ERR", "Invalid library metadata") }
        var name: String?
        for word in words.dropFirst() {
            guard word.lowercased().hasPrefix("name=") else { throw CommandError("ERR", "Invalid metadata value given: \(word)") }
            guard name == nil else { throw CommandError("ERR", "Invalid metadata value, name argument was given multiple times") }
            name = String(word.dropFirst(5))
        }
        guard let name else { throw CommandError("ERR", "Library name was not given") }
        guard engine.lowercased() == "lua" else { throw CommandError("ERR", "Engine '\(engine)' not found") }
        guard isValidName(name) else { throw invalidName }
        return (name, Array(code[end...]))
    }

    static let invalidName = CommandError(
        "ERR", "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")

    /// Letters, digits and underscores, at least one (Redis's rule for library and function names).
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x5f
        }
    }
}

/// The libraries the server has, by name. Function names are unique across libraries
/// regardless of case (Redis's functions dictionary); within a library they differ by case.
struct LibrarySet: Equatable, Sendable {
    private(set) var byName: [String: FunctionLibrary] = [:]

    init(_ libraries: [FunctionLibrary] = []) {
        for l in libraries { byName[l.name] = l }
    }

    /// Libraries in name order (FUNCTION LIST, FUNCTION DUMP).
    var sorted: [FunctionLibrary] { byName.keys.sorted().map { byName[$0]! } }

    var functionCount: Int { byName.values.reduce(0) { $0 + $1.functions.count } }

    /// The library and function FCALL names (the exact name first, then any case).
    func function(named name: String) -> (library: FunctionLibrary, function: LibraryFunction)? {
        var loose: (FunctionLibrary, LibraryFunction)?
        let lowered = name.lowercased()
        for library in byName.values {
            for f in library.functions {
                if f.name == name { return (library, f) }
                if loose == nil && f.name.lowercased() == lowered { loose = (library, f) }
            }
        }
        return loose
    }

    /// Adds `libraries` (FUNCTION LOAD, RESTORE): a library of the same name is replaced when
    /// `replace`, otherwise refused; a function name another library already has is refused.
    /// Redis's texts: `existingLibraryText` for a name collision with a library already here.
    mutating func add(_ libraries: [FunctionLibrary], replace: Bool, quotedLibraryName: Bool) throws(CommandError) {
        var next = byName
        for l in libraries {
            if next[l.name] != nil && !replace {
                throw CommandError("ERR", quotedLibraryName ? "Library '\(l.name)' already exists" : "Library \(l.name) already exists")
            }
            next[l.name] = nil
        }
        var taken: [String: String] = [:]
        for l in next.values { for f in l.functions { taken[f.name.lowercased()] = l.name } }
        for l in libraries {
            for f in l.functions where taken[f.name.lowercased()] != nil && taken[f.name.lowercased()] != l.name {
                throw CommandError("ERR", "Function \(f.name) already exists")
            }
            for f in l.functions { taken[f.name.lowercased()] = l.name }
            next[l.name] = l
        }
        byName = next
    }

    @discardableResult
    mutating func remove(_ name: String) -> FunctionLibrary? { byName.removeValue(forKey: name) }
}
