import BatonCore
import BatonIPC
import Foundation
import Testing

/// A restart in place with a live output follow served `as` a user (what the team dashboard's
/// run page asks, DashboardServer+Output): the follow is parked on its connection like any
/// other, so the drain ends as soon as every request taken is answered or parked, not at its
/// 10 s bound (`ActingCaller` once dropped `park`; the feed then went offline each restart).
@Suite("End to end: a restart in place with a follow served as a user", .serialized, .offPool)
struct RestartActingTests {
    static let config = #"""
        { requireUser: false, allow: { read: { users: ["daemon"] } }, actions: {
            slow: { exec: ["sh", "-c", "echo hi; sleep 30"] },
        } }
        """#

    /// Reads until `text` has come (or the connection ends, or 60 s without a byte).
    static func read(_ raw: HostileTests.Raw, until text: String) -> String {
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(raw.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !String(decoding: all, as: UTF8.self).contains(text) {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(raw.fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            all += buffer[..<n]
        }
        return String(decoding: all, as: UTF8.self)
    }

    @Test("an output follow as daemon's account, open across SIGUSR2: its connection gets the restarting line, and the drain ends because all were answered or parked, not at the bound")
    func actingFollowParks() throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let started = try daemon.baton("run", "slow", "--detach")
        let run = try #require(Int(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(started)")
        let raw = try HostileTests.Raw(daemon.socket)
        raw.send(Array(#"{"id":1,"op":"output","run":\#(run),"follow":true,"as":"daemon"}"#.utf8) + [10])
        let first = Self.read(raw, until: #""event":"output""#)
        try #require(first.contains(#""event":"output""#), "the follow as daemon got its output: \(first)")
        daemon.signal(SIGUSR2)
        let rest = raw.readToEnd()
        #expect(rest.split(separator: "\n").last == #"{"restarting":true}"#, "\(rest)")
        try daemon.waitForLog(" ready: ", count: 2)
        try daemon.waitForLog("restart drain: connections ")
        #expect(daemon.stderr.contains("restart drain: connections drained in"), "\(daemon.stderr.suffix(2_000))")
        #expect(!daemon.stderr.contains("not drained within"), "the drain waited its bound: \(daemon.stderr.suffix(2_000))")
    }
}
