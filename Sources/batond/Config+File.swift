import FoundationEssentials
import Glibc

extension Config {
    /// The bytes of the config file at `path`: a regular file (symlinks followed), read up to one
    /// byte past `maxSize` so that `parse` can refuse a larger one. A directory, a device, a FIFO
    /// or a socket is refused saying what it is, before it is opened (opening some devices does
    /// something, and a FIFO would hold the reload until a writer came); Foundation's words for
    /// these were "NSCocoaErrorDomain error 256" and "You don't have permission".
    static func contents(of path: String) throws(ConfigError) -> Data {
        var info = stat()
        guard stat(path, &info) == 0 else { throw problem(path, "cannot read the file: \(String(cString: strerror(errno)))") }
        if let kind = kind(notRegular: info.st_mode) { throw problem(path, kind) }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw problem(path, "cannot read the file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // The same file still: it may have been replaced between the stat and the open.
        guard fstat(fd, &info) == 0, kind(notRegular: info.st_mode) == nil else { throw problem(path, "changed while it was opened: try again") }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while data.count <= maxSize {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw problem(path, "cannot read the file: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return data
    }

    /// What a file that is not a regular file is, in words; nil for a regular file.
    private static func kind(notRegular mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "is a directory, not a config file"
        case S_IFCHR: "is not a regular file (it is a character device)"
        case S_IFBLK: "is not a regular file (it is a block device)"
        case S_IFIFO: "is not a regular file (it is a FIFO)"
        case S_IFSOCK: "is not a regular file (it is a socket)"
        default: "is not a regular file"
        }
    }

    private static func problem(_ path: String, _ message: String) -> ConfigError {
        ConfigError(file: path, problems: [.init(path: "", message: message)])
    }
}
