import BatonCore
import BatonDashboard
import FoundationEssentials
import Glibc

/// `baton dashboard --user-map FILE`: the team's user map, read at start (a bad line refuses to
/// start, naming it) and again on SIGHUP (a bad line keeps the rules in use, and says so).
enum DashboardUserMap {
    /// The most bytes a map file holds.
    static let maxBytes = 1 << 20

    /// The map in `path`, or a failure naming the file and line.
    static func load(_ path: String) throws(Failure) -> UserMap {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            throw Failure(code: ExitCode.usage, message: "--user-map: cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure(code: ExitCode.usage, message: "--user-map: cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[..<count])
            guard bytes.count <= maxBytes else { throw Failure(code: ExitCode.usage, message: "--user-map: \(path) is over \(maxBytes) bytes") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Failure(code: ExitCode.usage, message: "--user-map: \(path) is not UTF-8 text")
        }
        do { return try UserMap.parse(text, source: path) } catch {
            throw Failure(code: ExitCode.usage, message: "--user-map: \(error)", hint: "one rule a line: PATTERN ACCOUNT or PATTERN group:NAME (# comments)")
        }
    }

    /// SIGHUP, as a set.
    static var hangUp: sigset_t {
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, SIGHUP)
        return mask
    }

    /// Blocks SIGHUP in this thread and every thread started after: call it before any is.
    static func blockHangUp() {
        var mask = hangUp
        pthread_sigmask(SIG_BLOCK, &mask, nil)
    }

    /// Reads the map again on each SIGHUP (blocked: `blockHangUp`), on a thread of its own, and
    /// hands it to the server; a bad one leaves the rules in use.
    static func reloadOnHangUp(_ path: String, into server: DashboardServer) {
        SystemThread.start {
            var mask = hangUp
            var signal: Int32 = 0
            while sigwait(&mask, &signal) == 0 {
                do throws(Failure) {
                    let map = try load(path)
                    server.use(map)
                    DashboardCommand.say("SIGHUP: read \(path) again (\(map.rules.count) rules)\n")
                } catch {
                    DashboardCommand.say("SIGHUP: \(error.message); the rules read before stay in use\n", to: .error)
                }
            }
        }
    }
}
