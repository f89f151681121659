import FoundationEssentials
import Glibc

/// The file system walks of an artifacts directory: listed by descriptor, never following a link.
enum ArtifactTree {
    /// How deep a directory tree is listed.
    static let maxDepth = 32

    static func walk(_ root: String, _ prefix: String, files: inout [ArtifactScan.File], notices: inout [String], depth: Int) {
        let fd = ArtifactTree.open(root, prefix, directory: true)
        guard fd >= 0, let listing = fdopendir(fd) else {
            if fd >= 0 { close(fd) }
            notices.append("\(prefix.isEmpty ? "the artifacts directory" : prefix) could not be read: \(String(cString: strerror(errno)))")
            return
        }
        defer { closedir(listing) }
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let path = prefix.isEmpty ? name : prefix + "/" + name
            var info = stat()
            guard fstatat(dirfd(listing), name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG: files.append(ArtifactScan.File(name: path, size: Int64(info.st_size)))
            case S_IFDIR where depth + 1 < maxDepth: walk(root, path, files: &files, notices: &notices, depth: depth + 1)
            case S_IFDIR: notices.append("\(path): deeper than \(maxDepth) directories, not kept")
            case S_IFLNK: notices.append("\(path): a symlink, not followed")
            default: notices.append("\(path): not a regular file (a device, FIFO or socket), not kept")
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

    private static func empty(_ fd: Int32, depth: Int) {
        let listed = dup(fd)
        guard listed >= 0, let listing = fdopendir(listed) else { return }
        var names: [(String, Bool)] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            var info = stat()
            let isDirectory = fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFDIR
            names.append((name, isDirectory))
        }
        closedir(listing)
        for (name, isDirectory) in names {
            if isDirectory && depth < 256 {
                let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if child >= 0 {
                    empty(child, depth: depth + 1)
                    close(child)
                }
                unlinkat(fd, name, AT_REMOVEDIR)
            } else {
                unlinkat(fd, name, 0)
            }
        }
    }
}
