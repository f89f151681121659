@testable import batond
import BatonCore
import Foundation
import Testing

/// `output: { keep }`, globally and per action.
@Suite("Config: output.keep")
struct OutputConfigTests {
    @Test("keep is 16 MiB by default, the config's for every action, and an action's own over it")
    func keep() throws {
        let config = try Config.parse(Data("""
            { output: { keep: "2MiB" }, actions: { a: { exec: ["true"] }, b: { exec: ["true"], output: { keep: "0" } },
              c: { exec: ["true"], output: { keep: 1000 } } } }
            """.utf8), file: "t")
        #expect(config.actions.map(\.outputKeep) == [2 << 20, 0, 1_000])
        let plain = try Config.parse(Data(#"{ actions: { a: { exec: ["true"] } } }"#.utf8), file: "t")
        #expect(plain.actions.first?.outputKeep == 16 << 20)
    }

    @Test("a keep that is not a size names its field", arguments: [
        (#"{ output: { keep: "lots" }, actions: { a: { exec: ["true"] } } }"#, "output.keep"),
        (#"{ actions: { a: { exec: ["true"], output: { keep: -1 } } } }"#, "actions.a.output.keep"),
        (#"{ actions: { a: { exec: ["true"], output: { kept: "1MiB" } } } }"#, "actions.a.output.kept"),
        (#"{ output: { keep: "2TiB" }, actions: { a: { exec: ["true"] } } }"#, "output.keep"),
    ])
    func wrong(_ text: String, _ field: String) {
        do {
            _ = try Config.parse(Data(text.utf8), file: "t")
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.problems.contains { $0.path == field }, "\(error.problems)")
        }
    }

    @Test("sizes", arguments: [("0", 0), ("512", 512), ("64KiB", 65_536), ("16MiB", 16 << 20), ("1G", 1 << 30), ("3 MB", 3 << 20)] as [(String, Int64)])
    func sizes(_ text: String, _ bytes: Int64) {
        #expect(ByteSize.parse(text) == bytes)
    }

    @Test("not sizes", arguments: ["", "MiB", "1.5MiB", "-1", "1TiB", "99999999999999KiB", "1 MiBs"])
    func notSizes(_ text: String) {
        #expect(ByteSize.parse(text) == nil)
    }
}

/// `output: { journal }` at the top of the config.
@Suite("Config: output.journal")
struct OutputJournalConfigTests {
    @Test("journal is on by default, off with false; anything else names its field; an action may not set it")
    func journal() throws {
        #expect(try Config.parse(Data(#"{ actions: { a: { exec: ["true"] } } }"#.utf8), file: "t").journal)
        #expect(try !Config.parse(Data(#"{ output: { journal: false, keep: "1MiB" }, actions: { a: { exec: ["true"] } } }"#.utf8), file: "t").journal)
        for (text, field) in [(#"{ output: { journal: "yes" }, actions: { a: { exec: ["true"] } } }"#, "output.journal"),
                              (#"{ actions: { a: { exec: ["true"], output: { journal: false } } } }"#, "actions.a.output.journal")] {
            do {
                _ = try Config.parse(Data(text.utf8), file: "t")
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.problems.contains { $0.path == field }, "\(error.problems)")
            }
        }
    }
}

/// `tty` on an action.
@Suite("Config: tty")
struct TTYConfigTests {
    @Test("tty is off by default, on with true; anything else names its field")
    func tty() throws {
        let config = try Config.parse(Data(#"{ actions: { a: { exec: ["true"] }, b: { exec: ["true"], tty: true } } }"#.utf8), file: "t")
        #expect(config.actions.map(\.tty) == [false, true])
        do {
            _ = try Config.parse(Data(#"{ actions: { a: { exec: ["true"], tty: "yes" } } }"#.utf8), file: "t")
            Issue.record("accepted tty: \"yes\"")
        } catch {
            #expect(error.problems.contains { $0.path == "actions.a.tty" }, "\(error.problems)")
        }
    }
}
