import CRocksDB

/// The RocksDB version this module was built against, read from the library at run time.
public func rocksVersionProbe() -> Bool {
    var err: UnsafeMutablePointer<CChar>? = nil
    let opts = rocksdb_options_create()
    defer { rocksdb_options_destroy(opts) }
    _ = err
    err = nil
    return opts != nil
}
