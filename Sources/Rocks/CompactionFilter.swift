import CRocksDB
#if canImport(Glibc)
import Glibc
#endif

/// What a compaction filter decides for one entry.
public enum CompactionDecision: Sendable {
    case keep
    /// Drop the entry (RocksDB writes a tombstone where older versions may exist below).
    case remove
}

/// Looks at entries as compaction rewrites them; used to drop expired values.
/// Must be thread-safe: compactions run on several threads.
public protocol CompactionFilter: Sendable {
    var name: String { get }
    func filter(level: Int, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> CompactionDecision
}

/// Makes a compaction filter for each compaction, so a filter can keep state (a cache) for
/// the length of one compaction without locking: RocksDB runs each filter on one thread.
public protocol CompactionFilterFactory: Sendable {
    var name: String { get }
    func makeFilter() -> any CompactionFilter
}

/// Owns the Swift factory and its C name; RocksDB's options own the C factory, and each filter
/// it makes is owned (and destroyed) by the compaction that asked for it.
final class CompactionFilterFactoryBox {
    let factory: any CompactionFilterFactory
    let name: UnsafeMutablePointer<CChar>

    init(_ factory: any CompactionFilterFactory) {
        self.factory = factory
        self.name = strdup(factory.name)
    }

    deinit { free(name) }

    static func make(_ factory: any CompactionFilterFactory) -> OpaquePointer {
        let state = Unmanaged.passRetained(CompactionFilterFactoryBox(factory)).toOpaque()
        return rocksdb_compactionfilterfactory_create(
            state,
            { state in Unmanaged<CompactionFilterFactoryBox>.fromOpaque(state!).release() },
            { state, _ in
                let box = Unmanaged<CompactionFilterFactoryBox>.fromOpaque(state!).takeUnretainedValue()
                return CompactionFilterBox.make(box.factory.makeFilter())
            },
            { state in UnsafePointer(Unmanaged<CompactionFilterFactoryBox>.fromOpaque(state!).takeUnretainedValue().name) }
        )
    }
}

/// Owns the Swift filter and its C name. Unlike merge operators, RocksDB does not own a C
/// compaction filter: the database destroys it after closing.
final class CompactionFilterBox {
    let filter: any CompactionFilter
    let name: UnsafeMutablePointer<CChar>

    init(_ filter: any CompactionFilter) {
        self.filter = filter
        self.name = strdup(filter.name)
    }

    deinit { free(name) }

    static func make(_ filter: any CompactionFilter) -> OpaquePointer {
        let state = Unmanaged.passRetained(CompactionFilterBox(filter)).toOpaque()
        return rocksdb_compactionfilter_create(
            state,
            { state in Unmanaged<CompactionFilterBox>.fromOpaque(state!).release() },
            { state, level, key, keyLength, value, valueLength, _, _, changed in
                let box = Unmanaged<CompactionFilterBox>.fromOpaque(state!).takeUnretainedValue()
                changed?.pointee = 0
                let decision = box.filter.filter(
                    level: Int(level), key: UnsafeRawBufferPointer(start: key, count: keyLength),
                    value: UnsafeRawBufferPointer(start: value, count: valueLength))
                if case .remove = decision { return 1 }
                return 0
            },
            { state in UnsafePointer(Unmanaged<CompactionFilterBox>.fromOpaque(state!).takeUnretainedValue().name) }
        )
    }
}
