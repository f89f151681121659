import FoundationEssentials
import Glibc

/// `baton run --param-file NAME=FILE`: a param's value read from a file, or from stdin with `-`,
/// so that a secret is not in the command line, which every user of the machine may read
/// (`ps`, /proc/PID/cmdline). One trailing line end (LF or CRLF) is dropped, as `echo` and
/// editors add one.
enum ParamFiles {
    /// The params the `--param-file` options name, read; throws a usage error naming the one that
    /// cannot be read or is also given with `-p`.
    static func read(_ arguments: ParsedArguments, into params: [String: String], command: String) throws(UsageError) -> [String: String] {
        var params = params
        for (name, path) in try arguments.pairs("param-file", command: command) {
            guard params[name] == nil else {
                throw UsageError("baton \(command): param \(name) is given with both --param and --param-file: give it once")
            }
            guard let bytes = contents(path) else {
                throw UsageError("baton \(command): --param-file \(name)=\(path): cannot read \(path == "-" ? "stdin" : path): \(String(cString: strerror(errno)))")
            }
            var value = bytes
            if value.last == UInt8(ascii: "\n") { value.removeLast() }
            if value.last == UInt8(ascii: "\r") { value.removeLast() }
            params[name] = String(decoding: value, as: UTF8.self)
        }
        return params
    }

    /// A file's bytes (stdin's for `-`), at most a little over a param's longest value (batond
    /// refuses a longer one, naming the param); nil when it cannot be read.
    static func contents(_ path: String) -> [UInt8]? {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { if fd != 0 { close(fd) } }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8_192)
        while bytes.count <= 8_192 {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += buffer[..<n]
        }
        return bytes
    }
}
