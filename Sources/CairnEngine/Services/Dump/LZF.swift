/// Decompresses LZF, the compression Redis applies to strings longer than 20 bytes in RDB
/// files and DUMP payloads (`rdbcompression yes`). The format (liblzf, lzf_d.c): a control
/// byte below 32 starts a literal run of control+1 bytes; otherwise its top 3 bits are a
/// match length - 2 (7 means one more byte of length follows) and its low 5 bits with the
/// next byte an offset - 1 back into the output.
enum LZF {
    /// The decompressed bytes, exactly `length` of them; nil when the input is malformed.
    static func decompress(_ input: some Collection<UInt8>, length: Int) -> [UInt8]? {
        let src = Array(input)
        var out: [UInt8] = []
        out.reserveCapacity(length)
        var i = 0
        while i < src.count {
            let control = Int(src[i])
            i += 1
            if control < 32 {
                let run = control + 1
                guard i + run <= src.count, out.count + run <= length else { return nil }
                out.append(contentsOf: src[i..<i + run])
                i += run
            } else {
                var count = control >> 5
                if count == 7 {
                    guard i < src.count else { return nil }
                    count += Int(src[i])
                    i += 1
                }
                count += 2
                guard i < src.count else { return nil }
                let back = ((control & 0x1f) << 8 | Int(src[i])) + 1
                i += 1
                guard back <= out.count, out.count + count <= length else { return nil }
                // Byte by byte: a match may overlap the bytes it is producing.
                var from = out.count - back
                for _ in 0..<count {
                    out.append(out[from])
                    from += 1
                }
            }
        }
        return out.count == length ? out : nil
    }
}
