@testable import batond
import BatonCore
import BatonWire
import Foundation
import Testing

/// The shipped configs' actions survive the definition codec a fleet stores them with (`ActionCodec`).
@Suite("ActionCodec over the shipped configs")
struct DefinitionConfigTests {
    @Test("every action of examples/, packaging/ and the fuzzer's full config reads back as written",
          arguments: ["examples/baton.json5", "examples/hooks/hooks.json5", "packaging/baton.json5", "Tests/Fuzz/corpus/config/full.json5"])
    func shipped(_ file: String) throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../" + file)
        let config = try Config.load(path: url.standardizedFileURL.path)
        // packaging/'s config ships with no action: read, it has nothing to write.
        #expect(!config.actions.isEmpty || file.hasPrefix("packaging/"))
        for action in config.actions {
            let read = try ActionCodec.decode(ActionCodec.encode(action)) { name in config.actions.first { $0.name == name } }
            #expect(read == action, "\(action.name)")
        }
    }
}
