import BatonCore
import BatonStore
import Foundation
import Testing

/// Issue 41's test: batond restarted in place 20 times while 50 runs of mixed length run (sleeps,
/// output floods, children that `setsid`) and triggers come before, between and during the
/// restarts. Every run ends with its true exit code and every byte of its output, no trigger is
/// refused or lost, no key has two runs.
@Suite("End to end: 20 restarts in place under load", .serialized)
struct RestartStormTests {
    /// Run n of kind n % 3: a sleep, a flood in bursts, or a run that leaves a `setsid` child; each
    /// exits with its own code and writes what `expected` says.
    static let config = #"""
        { maxConcurrentRuns: 64, requireUser: false, shutdownGrace: "30s", actions: {
            job: { params: { n: { pattern: "^[0-9]+$" }, s: { pattern: "^[0-9.]+$" } }, keyParams: ["n"], policy: "reject",
                   exec: ["sh", "-c", "N=$BATON_PARAM_N; case $((N % 3)) in 0) echo start $N; sleep $BATON_PARAM_S; echo end $N; exit $((N % 7));; 1) for i in 1 2 3 4 5; do seq 1 3000; sleep $BATON_PARAM_S; done; echo done $N; exit $((N % 5));; *) setsid sh -c 'sleep 0.3' & echo forked $N; sleep $BATON_PARAM_S; exit $((N % 4 + 1));; esac"] },
        } }
        """#

    static func expected(_ n: Int) -> (code: Int, output: String) {
        switch n % 3 {
        case 0: return (n % 7, "start \(n)\nend \(n)\n")
        case 1: return (n % 5, String(repeating: (1...3000).map { "\($0)\n" }.joined(), count: 5) + "done \(n)\n")
        default: return (n % 4 + 1, "forked \(n)\n")
        }
    }

    /// Mixed lengths: from a tenth of a second to a few, so that most runs straddle restarts.
    static func sleep(_ n: Int) -> String { n % 3 == 1 ? String(format: "%.2f", Double(n % 4) * 0.1 + 0.05) : String(format: "%.1f", Double(n % 6) * 0.5 + 0.1) }

    @Test("20 SIGUSR2 restarts while 50 runs load: every exit code, every byte, every trigger answered, one run per key")
    func storm() throws {
        let daemon = try Daemon(config: Self.config)
        let pid = daemon.process.processIdentifier
        var next = 1
        func press() throws {
            let n = next
            next += 1
            let answer = try daemon.baton("run", "job", "-p", "n=\(n)", "-p", "s=\(Self.sleep(n))", "--detach")
            #expect(answer.code == 0 && answer.stdout == "\(n)\n", "trigger \(n): \(answer)")
        }
        for _ in 1...10 { try press() }
        for round in 1...20 {
            daemon.signal(SIGUSR2)
            try daemon.waitForLog("restarting in place:", count: round)
            // During the restart: waits in the backlog for the new batond.
            try press()
            try daemon.waitForLog(" ready: ", count: round + 1)
            try press()
        }
        #expect(daemon.process.isRunning && daemon.process.processIdentifier == pid)
        // The runs went across the restarts: each new batond says how many it adopted.
        let adopted = daemon.stderr.split(separator: "\n").compactMap { line -> Int? in
            let words = line.split(separator: " ")
            guard let at = words.firstIndex(of: "adopted"), at > 0 else { return nil }
            return Int(words[at - 1])
        }.reduce(0, +)
        #expect(adopted >= 20, "runs adopted over the 20 restarts: \(adopted)")
        #expect(next - 1 == 50)
        let connection = try Connection(path: daemon.database, readOnly: true)
        for run in 1...50 { _ = try daemon.baton("wait", String(run)) }
        let rows = try SurviveTests.column(connection, "SELECT id || ' ' || phase || ' ' || coalesce(exit_code, '-') FROM runs ORDER BY id")
        let want = (1...50).map { n in "\(n) \(Self.expected(n).code == 0 ? "success" : "failure") \(Self.expected(n).code)" }
        #expect(rows == want, "\(zip(rows, want).filter { $0.0 != $0.1 })")
        for n in 1...50 {
            let output = try SurviveTests.output(connection, run: n)
            #expect(SurviveTests.hash(output) == SurviveTests.hash(Data(Self.expected(n).output.utf8)), "run \(n)'s output")
        }
        #expect(try SurviveTests.column(connection, "SELECT count(DISTINCT key) FROM runs") == ["50"], "one run per key")
        #expect(try SurviveTests.column(connection, "SELECT count(*) FROM triggers") == ["0"], "no trigger refused or joined")
        daemon.stop()
    }
}
