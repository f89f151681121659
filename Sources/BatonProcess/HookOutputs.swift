import BatonEngine
import BatonRuntime
import Glibc

/// The directory batond keeps hook runs' output files in (`BATON_HOOK_OUTPUT`):
/// `$TMPDIR/baton-hooks-UID`, made by batond's user and writable by nobody else, so that every
/// file in it is batond's and a start may remove what a crashed batond left (issue 37, item 11).
/// Mode 0711: a run's user (another, with `user`) opens its own file by name but lists nothing.
///
/// The directory is opened without following a symlink and checked by its descriptor (owner,
/// type, no write bit for others); files are made and removed relative to that descriptor, so a
/// name swapped in a shared /tmp never leads batond to write or remove another user's file.
struct HookOutputs: ~Copyable {
    let path: String
    private let fd: Int32

    /// batond's directory in `temporary`, made if missing; nil when the name is taken by something
    /// that is not batond's user's private directory (a symlink, another user's directory).
    init?(temporary: String) {
        path = "\(temporary)/baton-hooks-\(geteuid())"
        if mkdir(path, 0o711) != 0 && errno != EEXIST { return nil }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & S_IFMT == S_IFDIR, info.st_mode & 0o022 == 0,
              fchmod(fd, 0o711) == 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// The start of every file name of a batond of `instance`: two batonds of one user (two
    /// databases) share the directory, and neither removes the other's files.
    static func prefix(instance: String?) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (instance ?? "").utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "baton-hook-\(String(hash, radix: 16))-"
    }

    /// A new file (mode 0600, O_EXCL) named `prefix` and 12 random hex digits: its descriptor and path.
    func create(prefix: String) -> Result<(fd: Int32, path: String), Errno> {
        for _ in 0..<8 {
            let name = prefix + String(UInt64.random(in: 1 << 44 ..< 1 << 48), radix: 16)
            let made = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if made >= 0 { return .success((made, "\(path)/\(name)")) }
            if errno != EEXIST { return .failure(Errno(errno)) }
        }
        return .failure(Errno(EEXIST))
    }

    /// Removes every entry whose name starts with `prefix` (never following a link); returns how many.
    func removeAll(prefix: String) -> Int {
        let listing = dup(fd)
        guard listing >= 0, let directory = fdopendir(listing) else { return 0 }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { names.append(name) }
        }
        return names.count { unlinkat(fd, $0, 0) == 0 }
    }
}
