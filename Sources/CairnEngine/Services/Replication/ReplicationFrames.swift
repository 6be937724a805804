public import RESP

/// What travels on a replication link after the handshake. Every frame is a RESP array of
/// bulk strings, so both sides read them with the request parser.
///
/// Primary to replica: `SNAPSHOT total-bytes file-count`, then `FILE name chunk` (a file's
/// bytes in order, in chunks) and `SYNCED` (a full sync's files are complete); `BATCH
/// sequence bytes` (one WAL write batch, RocksDB's serialized form); `PING` (once a second,
/// so an idle link is known alive); `TAKEOVER-READY sequence` (see Takeover.swift); `PROMOTE`
/// (FAILOVER chose this replica: it asks to take over).
/// Replica to primary: `REPLCONF ACK sequence` (the last sequence number it applied) and
/// `REPLCONF TAKEOVER`.
public enum ReplicationFrame {
    public static func snapshot(totalBytes: Int, files: Int, into out: inout RESPWriter) {
        out.arrayHeader(3)
        out.bulk("SNAPSHOT")
        out.bulk(String(totalBytes))
        out.bulk(String(files))
    }

    public static func file(_ name: String, chunk: UnsafeRawBufferPointer, into out: inout RESPWriter) {
        out.arrayHeader(3)
        out.bulk("FILE")
        out.bulk(name)
        out.bulk(chunk)
    }

    public static func synced(into out: inout RESPWriter) {
        out.arrayHeader(1)
        out.bulk("SYNCED")
    }

    static func batch(sequence: UInt64, data: [UInt8], into out: inout RESPWriter) {
        out.arrayHeader(3)
        out.bulk("BATCH")
        out.bulk(String(sequence))
        out.bulk(data)
    }

    public static func ping(into out: inout RESPWriter) {
        out.arrayHeader(1)
        out.bulk("PING")
    }

    public static func takeoverReady(_ sequence: UInt64, into out: inout RESPWriter) {
        out.arrayHeader(2)
        out.bulk("TAKEOVER-READY")
        out.bulk(String(sequence))
    }

    public static func promote(into out: inout RESPWriter) {
        out.arrayHeader(1)
        out.bulk("PROMOTE")
    }

    public static func ack(_ sequence: UInt64, into out: inout RESPWriter) {
        out.arrayHeader(3)
        out.bulk("REPLCONF")
        out.bulk("ACK")
        out.bulk(String(sequence))
    }

    public static func takeover(into out: inout RESPWriter) {
        out.arrayHeader(2)
        out.bulk("REPLCONF")
        out.bulk("TAKEOVER")
    }

    /// Whether a frame is `BATCH`: asked of every frame a replica reads, so without a String.
    public static func isBatch(_ frame: [[UInt8]]) -> Bool {
        frame.first?.elementsEqual("BATCH".utf8) ?? false
    }

    /// A frame's name, upper-cased.
    public static func name(_ frame: [[UInt8]]) -> String {
        String(decoding: frame.first ?? [], as: UTF8.self).uppercased()
    }

    public static func number(_ bytes: [UInt8]) -> UInt64? {
        UInt64(String(decoding: bytes, as: UTF8.self))
    }
}
