import FoundationEssentials
import Glibc

/// The file system walks of an artifacts directory: listed by descriptor, never following a link.
enum ArtifactTree {
    /// How deep a directory tree is listed.
    static let maxDepth = 32

    /// One listing of an attempt's directory: at most `limit` entries, at most `maxNotices` notices.
    struct Walk {
        var root: String
        var limit: Int
        var owner: ArtifactOwner?
        var files: [ArtifactScan.File] = []
        var notices: [String] = []
        var unsaid = 0
        var entries = 0
        var total: Int64 = 0

        /// Whether more entries than `limit` were found (the listing stopped there).
        var over: Bool { entries > limit }
        /// The notices, and how many more were not said.
        var said: [String] { unsaid == 0 ? notices : notices + ["and \(unsaid) more not kept"] }

        mutating func say(_ notice: String) {
            if notices.count < ArtifactScan.maxNotices { notices.append(notice) } else { unsaid += 1 }
        }

        mutating func walk(_ prefix: String, depth: Int) {
            let fd = ArtifactTree.open(root, prefix, directory: true)
            guard fd >= 0, let listing = fdopendir(fd) else {
                if fd >= 0 { close(fd) }
                say("\(prefix.isEmpty ? "the artifacts directory" : prefix) could not be read: \(String(cString: strerror(errno)))")
                return
            }
            defer { closedir(listing) }
            // The attempt's directory itself may be a mount of its user's (it owns it): not read then.
            var top = stat()
            if prefix.isEmpty, let owner, fstat(dirfd(listing), &top) != 0 || top.st_dev != owner.device {
                return say("the artifacts directory: another file system mounted there, not read")
            }
            while !over, let entry = readdir(listing) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." { continue }
                entries += 1
                if over { return }
                let path = prefix.isEmpty ? name : prefix + "/" + name
                var info = stat()
                guard fstatat(dirfd(listing), name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                look(path, info, depth: depth)
            }
        }

        private mutating func look(_ path: String, _ info: stat, depth: Int) {
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                if let why = ArtifactScan.refusal(info, owner: owner) { return say("\(path): \(why), not kept") }
                files.append(ArtifactScan.File(name: path, size: Int64(info.st_size)))
                total = ArtifactScan.sum([total, Int64(info.st_size)])
            case S_IFDIR where owner.map { info.st_dev != $0.device } ?? false:
                say("\(path): another file system mounted there, not read")
            case S_IFDIR where depth + 1 < maxDepth: walk(path, depth: depth + 1)
            case S_IFDIR: say("\(path): deeper than \(maxDepth) directories, not kept")
            case S_IFLNK: say("\(path): a symlink, not followed")
            default: say("\(path): not a regular file (a device, FIFO or socket), not kept")
            }
        }
    }

    /// Opens `name` under `root` one component at a time, each without following a symlink.
    static func open(_ root: String, _ name: String, directory: Bool = false) -> Int32 {
        var fd = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        let parts = name.split(separator: "/").map(String.init)
        for (index, part) in parts.enumerated() where fd >= 0 {
            let last = index == parts.count - 1
            let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (last && !directory ? 0 : O_DIRECTORY)
            let next = part == ".." || part == "." ? -1 : openat(fd, part, flags)
            close(fd)
            fd = next
        }
        return fd
    }

    /// Removes a directory tree (never following a link out of it); quiet when it is not there.
    static func remove(_ path: String) {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            unlink(path)
            return
        }
        empty(fd, depth: 0)
        close(fd)
        rmdir(path)
    }

    /// Unlinks each entry as it is read (never every name at once); a pass that found some is
    /// followed by another (a directory changed while read may skip one), at most four.
    private static func empty(_ fd: Int32, depth: Int) {
        let listed = dup(fd)
        guard listed >= 0, let listing = fdopendir(listed) else {
            if listed >= 0 { close(listed) }
            return
        }
        defer { closedir(listing) }
        for _ in 0..<4 {
            rewinddir(listing)
            var seen = false
            while let entry = readdir(listing) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." { continue }
                seen = true
                if unlinkat(fd, name, 0) == 0 || errno != EISDIR { continue }
                if depth < 256 {
                    let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    if child >= 0 {
                        empty(child, depth: depth + 1)
                        close(child)
                    }
                }
                unlinkat(fd, name, AT_REMOVEDIR)
            }
            if !seen { return }
        }
    }
}
