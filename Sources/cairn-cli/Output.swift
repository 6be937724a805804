import CairnCLIKit
import Glibc
import RESP

/// Where cairn-cli writes: standard output for replies, standard error for messages. Unbuffered
/// `write(2)` calls, so output and prompts interleave in order.
enum Output {
    static func out(_ bytes: [UInt8]) { write(1, bytes) }

    static func out(_ text: String) { write(1, Array(text.utf8)) }

    static func err(_ text: String) { write(2, Array(text.utf8)) }

    /// Prints a reply in `format`. In raw mode an error goes to standard error, so a script's
    /// output holds only data.
    static func reply(_ value: RESPValue, _ format: ReplyFormat) {
        if format == .raw, case .error = value {
            write(2, ReplyFormatter.format(value, as: .raw))
        } else {
            out(ReplyFormatter.format(value, as: format))
        }
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return  // a closed pipe (`cairn-cli ... | head`): nothing more to say
            }
        }
    }
}
