import Foundation

/// A fresh directory for one test (`baton-NAME-UUID` under the temporary directory), removed with
/// its contents when the value goes. Swift may release a value right after its last use, not at
/// the end of its scope: a test whose processes or files still use the directory after its last
/// mention keeps it to its end with `defer { withExtendedLifetime(directory) {} }`.
final class ScratchDirectory {
    let path: String

    init(_ name: String = "test") {
        path = NSTemporaryDirectory() + "baton-\(name)-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { path + "/" + name }
}
