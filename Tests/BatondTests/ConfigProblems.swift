@testable import batond
import Foundation

/// What the config reader says is wrong with `text`, one `path: message` line per problem; none
/// when it parses.
func problems(_ text: String) -> [String] {
    do {
        _ = try Config.parse(Data(text.utf8), file: "t.json5")
        return []
    } catch {
        return error.problems.map { "\($0.path): \($0.message)" }
    }
}
