/// What a stream's metadata holds besides its version and length, as Redis's `stream` struct:
///
/// ```
/// last ID          16 bytes   the highest ID ever added (XADD's next must be above it)
/// max deleted ID   16 bytes   the highest ID deleted by XDEL or XTRIM (0-0: none)
/// entries added     8 bytes   every entry ever added, deleted ones included
/// last node         8 bytes   the emulated listpack node XADD appends to (`StreamNodes`)
/// its entries       4 bytes   entries it took, deleted ones included
/// its live entries  4 bytes
/// ```
/// The consumer groups' lag is computed from these (`StreamLag`).
struct StreamCounters: Equatable {
    var lastID = StreamID.zero
    var maxDeletedID = StreamID.zero
    var entriesAdded: UInt64 = 0
    var lastNode: UInt64 = 0
    var lastNodeEntries: UInt32 = 0
    var lastNodeLive: UInt32 = 0

    static let encodedSize = 56

    init() {}

    init(_ bytes: ArraySlice<UInt8>) {
        let b = bytes.startIndex
        lastID = StreamID(bytes: bytes[b..<(b + 16)])
        maxDeletedID = StreamID(bytes: bytes[(b + 16)..<(b + 32)])
        entriesAdded = BigEndian.read(UInt64.self, bytes[(b + 32)...])
        lastNode = BigEndian.read(UInt64.self, bytes[(b + 40)...])
        lastNodeEntries = BigEndian.read(UInt32.self, bytes[(b + 48)...])
        lastNodeLive = BigEndian.read(UInt32.self, bytes[(b + 52)...])
    }

    func append(to out: inout [UInt8]) {
        out += lastID.bytes
        out += maxDeletedID.bytes
        BigEndian.append(entriesAdded, to: &out)
        BigEndian.append(lastNode, to: &out)
        BigEndian.append(lastNodeEntries, to: &out)
        BigEndian.append(lastNodeLive, to: &out)
    }
}
