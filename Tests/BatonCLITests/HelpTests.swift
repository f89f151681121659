@testable import baton
import Foundation
import Testing

@Suite("baton's help texts")
struct HelpTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("help.golden")

    /// `baton --help`, then each command's `--help`, as the binary prints them.
    static func allHelp() -> String {
        var text = "$ baton --help\n" + CommandList.usage + "\n"
        for command in CommandList.all {
            text += "\n$ baton \(command.name) --help\n" + command.help
        }
        return text
    }

    @Test("baton --help and every command's --help are exactly the reviewed text in help.golden")
    func exactText() throws {
        let expected = try String(contentsOf: Self.golden, encoding: .utf8)
        let actual = Self.allHelp()
        if actual != expected, ProcessInfo.processInfo.environment["BATON_UPDATE_GOLDEN"] == "1" {
            try actual.write(to: Self.golden, atomically: true, encoding: .utf8)
        }
        #expect(actual == expected, "help changed; review it and run with BATON_UPDATE_GOLDEN=1 to accept")
    }

    @Test("every command has a one-line summary, and every option a help line")
    func everyCommandDocumented() {
        for command in CommandList.all {
            #expect(!command.summary.isEmpty && !command.summary.contains("\n"), "\(command.name)")
            for option in command.options { #expect(!option.help.isEmpty, "\(command.name) --\(option.long)") }
        }
    }
}
