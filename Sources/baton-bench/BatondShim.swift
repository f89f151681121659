import Foundation

/// Which `baton-shim` the measured batond runs its actions under (the bench's action survives
/// restarts, the default), and what batond says it uses. batond looks for the shim beside its own
/// executable, in `../libexec/baton` from it and in /usr/libexec/baton: a batond in /tmp has none
/// beside it, an installed one has.
enum BatondShim: Sendable, Equatable {
    /// batond as given, with whatever shim it finds.
    case asFound
    /// batond copied into the scratch directory with this shim beside it.
    case path(String)
    /// batond copied into the scratch directory alone.
    case none

    /// `--shim PATH|none`.
    init?(argument: String) {
        if argument == "none" { self = .none } else if argument.hasPrefix("/") { self = .path(argument) } else { return nil }
    }

    /// The batond to start for this choice, made in `directory` (`bin/batond`, and `bin/baton-shim`
    /// linked to the shim) where the choice is not `asFound`.
    func binary(_ binary: String, in directory: String) throws -> String {
        if self == .asFound { return binary }
        let bin = directory + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: binary, toPath: bin + "/batond")
        if case let .path(shim) = self { try FileManager.default.createSymbolicLink(atPath: bin + "/baton-shim", withDestinationPath: shim) }
        return bin + "/batond"
    }

    /// What batond's log says of its shim: used (true, with the shim and where its directories
    /// are, and that place's file system), not found (false), or nothing said (nil: a batond
    /// before session 28 logs only a missing shim).
    static func used(log: String) -> (used: Bool?, description: String) {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let marker = "their shims' directories in "
        if let line = text.split(separator: "\n").first(where: { $0.contains(marker) }) {
            let directory = String(line[line.range(of: marker)!.upperBound...])
            let executable = line.range(of: "run under ").map { line[$0.upperBound...].prefix { $0 != "," } } ?? "?"
            // A batond of session 30 on names the disk's place for the spools too, before the marker.
            let spools = line.range(of: "once batond is gone in ").flatMap { start in
                line.range(of: ", " + marker).flatMap { end in start.upperBound <= end.lowerBound ? String(line[start.upperBound..<end.lowerBound]) : nil }
            }
            return (true, "under \(executable), its directories in \(directory) (\(fileSystem(directory)))"
                + (spools.map { ", its spools once batond is gone in \($0) (\(fileSystem($0)))" } ?? ""))
        }
        if text.contains("baton-shim is not beside batond") { return (false, "no baton-shim: direct spawns") }
        return (nil, "not said by this batond (one before session 28 logs only a missing shim)")
    }

    /// The file system type of `path`: that of the longest mount point above it in /proc/self/mountinfo.
    static func fileSystem(_ path: String) -> String {
        let lines = ((try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? "").split(separator: "\n")
        var best: (point: Substring, type: Substring)?
        for line in lines {
            let fields = line.split(separator: " ")
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            let point = fields[4]
            let under = point == "/" || path == point || path.hasPrefix(point + "/")
            if under, point.count >= (best?.point.count ?? -1) { best = (point, fields[dash + 1]) }
        }
        return best.map { "\($0.type) at \($0.point)" } ?? "file system unknown"
    }
}
