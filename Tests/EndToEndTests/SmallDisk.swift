import Foundation
import Testing

/// A 2 MiB tmpfs to fill, for the full-disk tests. `unmount` it in a `defer`.
enum SmallDisk {
    /// Mounts one under a new temporary directory named after `name`; returns its path.
    static func mount(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + name + "-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = try execute("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", path])
        guard mounted.code == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw SmallDiskError(message: "cannot mount a small tmpfs at \(path): \(mounted.stderr)")
        }
        return path
    }

    static func unmount(_ path: String) {
        _ = try? execute("/usr/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }

    struct SmallDiskError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
