import RESP

/// Feeds the same bytes to a fresh parser in every way a socket could deliver them — all at
/// once, byte by byte, and in chunks of several sizes — and returns each way's results, so a
/// test can require that they all agree (swift-nio's ByteToMessageDecoderVerifier idea).
enum SplitFeeding {
    static let chunkSizes = [Int.max, 1, 2, 3, 7, 64]

    static func requests(_ bytes: [UInt8], limits: RESPLimits = .init()) throws -> [[[[UInt8]]]] {
        try chunkSizes.map { size in
            var parser = RequestParser(limits: limits)
            var out: [[[UInt8]]] = []
            var offset = 0
            while offset < bytes.count {
                let end = size == Int.max ? bytes.count : min(bytes.count, offset + size)
                parser.append(Array(bytes[offset..<end]))
                offset = end
                while let r = try parser.next() { out.append(r) }
            }
            return out
        }
    }

    static func values(_ bytes: [UInt8]) throws -> [[RESPValue]] {
        try chunkSizes.map { size in
            var parser = ValueParser()
            var out: [RESPValue] = []
            var offset = 0
            while offset < bytes.count {
                let end = size == Int.max ? bytes.count : min(bytes.count, offset + size)
                parser.append(Array(bytes[offset..<end]))
                offset = end
                while let v = try parser.next() { out.append(v) }
            }
            return out
        }
    }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
func argv(_ words: String...) -> [[UInt8]] { words.map { Array($0.utf8) } }
