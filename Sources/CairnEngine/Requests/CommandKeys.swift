/// The keys of a request as Redis's COMMAND GETKEYS finds them: by the key specs, and where
/// those cannot tell (an incomplete or unknown spec, flags that depend on the arguments, a
/// malformed `numkeys`) by the command's fallback (`KeysFallback`), as Redis falls back to its
/// `getkeys_proc`. COMMAND GETKEYS and GETKEYSANDFLAGS answer from it; the dispatcher keeps
/// the table's key positions and key finders (`Command.keys(in:)`).
/// https://redis.io/docs/latest/develop/reference/key-specs/
extension CommandSpec {
    /// One key of a request: its position in `argv` and how the command uses it.
    struct FoundKey {
        let position: Int
        let flags: KeySpec.Flags
    }

    /// Whether the command has keys at all: a key spec that is not `not_key`, or a fallback.
    var hasKeys: Bool { keysFallback != nil || keySpecs.contains { !$0.flags.contains(.notKey) } }

    /// The keys of `argv` (the command's name or container and subcommand first); empty when
    /// the request names none (or is malformed, as Redis then finds none).
    func keys(in argv: [[UInt8]]) -> [FoundKey] {
        let variable = keySpecs.contains { $0.flags.contains(.variableFlags) }
        if keySpecs.contains(where: { !$0.flags.contains(.notKey) }) && !variable, let found = keysBySpecs(argv) {
            return found
        }
        return keysFallback.map { fallbackKeys($0, argv) } ?? []
    }

    /// The keys the specs give, in spec order; nil when a spec cannot say (unknown, incomplete,
    /// or its positions fall outside the request).
    private func keysBySpecs(_ argv: [[UInt8]]) -> [FoundKey]? {
        let argc = argv.count
        var found: [FoundKey] = []
        for spec in keySpecs where !spec.flags.contains(.notKey) {
            var first = 0
            switch spec.begin {
            case .index(let i):
                first = i
            case .keyword(let word, let from):
                // Searched from `from` toward the end (or from the end toward the name), the
                // far end itself excluded, as Redis searches.
                let keyword = word.lowercased()
                let start = from > 0 ? from : argc + from
                let end = from > 0 ? argc - 1 : 0
                var i = start
                while i != end && i >= 0 && i < argc {
                    if Bytes.lowercased(argv[i]) == keyword {
                        first = i + 1
                        break
                    }
                    i += start <= end ? 1 : -1
                }
                if first == 0 { continue }
            case .unknown:
                return nil
            }
            let last: Int
            let step: Int
            switch spec.find {
            case .range(let lastKey, let s, let limit):
                step = s
                if lastKey >= 0 {
                    last = first + lastKey
                } else if limit == 0 {
                    last = argc + lastKey
                } else {
                    last = first + (argc - first) / limit + lastKey
                }
            case .keynum(let index, let firstKey, let s):
                step = s
                guard first + index < argc, let n = Bytes.int64(argv[first + index]), n >= 0, n < Int64(argc) else { return nil }
                first += firstKey
                last = first + Int(n) - 1
            case .unknown:
                return nil
            }
            guard last < argc, last >= first, first < argc, step > 0 else { return nil }
            for i in stride(from: first, through: last, by: step) { found.append(FoundKey(position: i, flags: spec.flags)) }
            if spec.flags.contains(.incomplete) { return nil }
        }
        return found
    }

    private func fallbackKeys(_ fallback: KeysFallback, _ argv: [[UInt8]]) -> [FoundKey] {
        let argc = argv.count
        func word(_ i: Int) -> String { Bytes.lowercased(argv[i]) }
        switch fallback {
        case .numkeys:
            // `numkeys` read as C's atoi reads it; nothing when it is below 1 or names more
            // keys than there are arguments. Redis gives these keys no flags.
            guard let spec = keySpecs.first(where: { if case .keynum = $0.find { true } else { false } }),
                  case .index(let begin) = spec.begin, case .keynum(let index, let firstKey, let step) = spec.find,
                  begin + index < argc
            else { return [] }
            let first = begin + firstKey
            let n = Self.atoi(argv[begin + index])
            guard n >= 1, n <= (argc - first) / step else { return [] }
            var found = (0..<n).map { FoundKey(position: first + $0 * step, flags: []) }
            // The destination of ZUNIONSTORE and its kind, the range spec before the keys.
            if let store = keySpecs.first(where: { if case .range = $0.find { true } else { false } }),
               case .index(let at) = store.begin {
                found.append(FoundKey(position: at, flags: []))
            }
            return found
        case .sortRO:
            return [FoundKey(position: 1, flags: [.RO, .access])]
        case .sort:
            // The last STORE's key; LIMIT's two arguments and BY's and GET's one are skipped.
            var store: Int? = nil
            var i = 2
            while i < argc {
                let w = word(i)
                if w == "limit" {
                    i += 2
                } else if w == "store" && i + 1 < argc {
                    store = i + 1
                } else if w == "get" || w == "by" {
                    i += 1
                }
                i += 1
            }
            return [FoundKey(position: 1, flags: [.RO, .access])] + (store.map { [FoundKey(position: $0, flags: [.OW, .update])] } ?? [])
        case .migrate:
            // The key argument, or, with an empty one, the keys after KEYS.
            var first = 3
            var count = 1
            if argc > 6 {
                var i = 6
                while i < argc {
                    let w = word(i)
                    if w == "keys" {
                        if !argv[3].isEmpty {
                            count = 0
                        } else {
                            first = i + 1
                            count = argc - first
                        }
                        break
                    }
                    if w == "auth" { i += 1 } else if w == "auth2" { i += 2 }
                    i += 1
                }
            }
            return (0..<count).map { FoundKey(position: first + $0, flags: [.RW, .access, .delete]) }
        case .georadius:
            var stored: Int? = nil
            var i = 5
            while i < argc {
                let w = word(i)
                if (w == "store" || w == "storedist") && i + 1 < argc {
                    stored = i + 1
                    i += 1
                }
                i += 1
            }
            return [FoundKey(position: 1, flags: [])] + (stored.map { [FoundKey(position: $0, flags: [])] } ?? [])
        case .set:
            let get = argc > 3 && argv[3...].contains { Bytes.lowercased($0) == "get" }
            return [FoundKey(position: 1, flags: get ? [.RW, .access, .update] : [.OW, .update])]
        case .bitfield:
            // Read-only when every operation is a GET (or OVERFLOW); anything else, or a
            // malformed one, counts as a write.
            var readOnly = true
            var i = 2
            while i < argc {
                let left = argc - i - 1
                let w = word(i)
                if w == "get" && left >= 2 {
                    i += 2
                } else if (w == "set" || w == "incrby") && left >= 3 {
                    readOnly = false
                    break
                } else if w == "overflow" && left >= 1 {
                    i += 1
                } else {
                    readOnly = false
                    break
                }
                i += 1
            }
            return [FoundKey(position: 1, flags: readOnly ? [.RO, .access] : [.RW, .access, .update])]
        }
    }

    /// C's `atoi`: optional blanks and sign, then digits up to the first other byte; 0 when none.
    private static func atoi(_ bytes: [UInt8]) -> Int {
        var i = 0
        while i < bytes.count, bytes[i] == 32 || (9...13).contains(bytes[i]) { i += 1 }
        var negative = false
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
            negative = bytes[i] == UInt8(ascii: "-")
            i += 1
        }
        var value = 0
        while i < bytes.count, (48...57).contains(bytes[i]), value < Int(Int32.max) {
            value = value * 10 + Int(bytes[i] - 48)
            i += 1
        }
        return negative ? -value : value
    }
}
