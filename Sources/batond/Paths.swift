import BatonIPC
import FoundationEssentials

/// Where batond keeps its files when neither a flag nor the config says.
enum Paths {
    /// The config used without `--config`: `$BATON_CONFIG`, `/etc/baton/baton.json5`, or the
    /// example config of a source checkout.
    static func defaultConfig(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let path = environment["BATON_CONFIG"], !path.isEmpty { return path }
        let candidates = ["/etc/baton/baton.json5", FileManager.default.currentDirectoryPath + "/examples/baton.json5"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Creates the parent directory of a file with `mode` (default 0750) if it is missing.
    static func ensureParent(of path: String, mode: Int = 0o750) throws {
        let parent = path.parentPath
        guard !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) else { return }
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: mode])
    }
}
