import Foundation

/// The runtime directory the measured batond is given (`$RUNTIME_DIRECTORY`), where it keeps its
/// shims' directories. The packaged service has one (`RuntimeDirectory=baton`: /run/baton, a tmpfs),
/// so by default the bench gives batond a fresh one on a tmpfs as systemd would; without one, batond
/// keeps them beside the database (on the disk, in ext4's journal with the database's commits).
enum BatondRuntime: Sendable, Equatable {
    /// A fresh directory under /dev/shm (a tmpfs), mode 0700: the service's setup. Where /dev/shm is
    /// not a tmpfs, none.
    case tmpfs
    /// This directory, as given.
    case path(String)
    /// No `$RUNTIME_DIRECTORY`: batond takes /run/baton where that is safe, else the disk beside the database.
    case none

    /// `--runtime tmpfs|none|PATH`.
    init?(argument: String) {
        switch argument {
        case "tmpfs": self = .tmpfs
        case "none": self = .none
        default:
            guard argument.hasPrefix("/") else { return nil }
            self = .path(argument)
        }
    }

    /// batond's environment for this choice (`inherited`, this process's, with `RUNTIME_DIRECTORY` set or
    /// removed), and the directory made for it after `scratch`'s name, for the caller to remove once batond is gone.
    func prepare(scratch: String, inherited: [String: String] = ProcessInfo.processInfo.environment) throws
        -> (environment: [String: String], made: String?) {
        var environment = inherited
        environment["RUNTIME_DIRECTORY"] = nil
        switch self {
        case .none: return (environment, nil)
        case let .path(directory):
            environment["RUNTIME_DIRECTORY"] = directory
            return (environment, nil)
        case .tmpfs:
            guard BatondShim.fileSystem("/dev/shm").hasPrefix("tmpfs ") else { return (environment, nil) }
            let directory = "/dev/shm/" + URL(fileURLWithPath: scratch).lastPathComponent + "-runtime"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
            environment["RUNTIME_DIRECTORY"] = directory
            return (environment, directory)
        }
    }
}
