@testable import CairnEngine
import Testing

/// `CommandTable.command(named:)`: a request's name finds the same command by its packed bytes
/// (names of up to 15 bytes) as by the lower-cased `String` (longer ones), in any case, and
/// nothing that only resembles a name.
@Suite struct CommandNameTests {
    let table = CommandTable.standard

    @Test func everyCommandIsFoundByItsNameInAnyCase() {
        for (name, command) in table.commands {
            let bytes = Array(name.utf8)
            #expect(table.command(named: bytes)?.name == command.name)
            #expect(table.command(named: Array(name.uppercased().utf8))?.name == command.name)
            let mixed = bytes.enumerated().map { i, b in i % 2 == 0 && b >= 97 && b <= 122 ? b - 32 : b }
            #expect(table.command(named: mixed)?.name == command.name)
        }
        // Both paths are taken: names of 15 bytes or fewer are packed, longer ones are not.
        #expect(table.commands.keys.contains { $0.utf8.count > CommandName.maxBytes })
        #expect(table.commands.keys.contains { $0.utf8.count == CommandName.maxBytes })
    }

    @Test func lookalikesFindNothing() {
        for name in ["", "ge", "gett", "get\0", "\0get", "g\u{e9}t", "zrangebyscor", "zrevrangebyscorex", "get ",
                     "SET\0\0\0\0\0\0\0\0\0\0\0\0", "zrevrangebyscore\0"] {
            #expect(table.command(named: Array(name.utf8)) == nil, "\(name.debugDescription)")
        }
        // Bytes that are not UTF-8 are no command's name either.
        #expect(table.command(named: [0x67, 0xFF, 0x74]) == nil)
        #expect(table.command(named: [UInt8](repeating: 0xC3, count: 20)) == nil)
    }

    @Test func packingKeepsTheLength() {
        #expect(CommandName(lowercasing: Array("get".utf8)) == CommandName(lowercasing: Array("GET".utf8)))
        #expect(CommandName(lowercasing: Array("get".utf8)) != CommandName(lowercasing: Array("get\0".utf8)))
        #expect(CommandName(lowercasing: [UInt8](repeating: 97, count: 15)) != nil)
        #expect(CommandName(lowercasing: [UInt8](repeating: 97, count: 16)) == nil)
    }
}
