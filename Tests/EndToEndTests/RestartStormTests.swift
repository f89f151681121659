import BatonCore
import BatonStore
import Foundation
import Testing

/// Issue 41's test: batond restarted in place 20 times while 50 runs of mixed length run (sleeps,
/// output floods, children that `setsid`) and triggers come before, between and during the
/// restarts, and keys pressed again meanwhile (`reject`: refused while in flight; `queue`: a
/// follow-up). Every run ends with its true exit code and every byte of its output, no trigger is
/// lost, no key ever has two runs at once.
@Suite("End to end: 20 restarts in place under load", .serialized, .offPool)
struct RestartStormTests {
    /// Run n of kind n % 3: a sleep, a flood in bursts, or a run that leaves a `setsid` child; each
    /// exits with its own code and writes what `expected` says.
    static let config = #"""
        { maxConcurrentRuns: 64, requireUser: false, shutdownGrace: "30s", actions: {
            job: { params: { n: { pattern: "^[0-9]+$" }, s: { pattern: "^[0-9.]+$" } }, keyParams: ["n"], policy: "reject",
                   exec: ["sh", "-c", "N=$BATON_PARAM_N; case $((N % 3)) in 0) echo start $N; sleep $BATON_PARAM_S; echo end $N; exit $((N % 7));; 1) for i in 1 2 3 4 5; do seq 1 3000; sleep $BATON_PARAM_S; done; echo done $N; exit $((N % 5));; *) setsid sh -c 'sleep 0.3' & echo forked $N; sleep $BATON_PARAM_S; exit $((N % 4 + 1));; esac"] },
            line: { params: { n: { pattern: "^[0-9]+$" } }, keyParams: ["n"], policy: "queue", exec: ["sh", "-c", "echo line $BATON_PARAM_N; sleep 0.4"] },
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

    /// Runs of one key that overlap: a later run of the key that started before an earlier one ended.
    static let overlaps = """
        SELECT a.id || ' and ' || b.id FROM runs a JOIN runs b ON a.key = b.key AND a.id < b.id
        WHERE b.started_at IS NOT NULL AND (a.ended_at IS NULL OR b.started_at < a.ended_at)
        """

    @Test("20 SIGUSR2 restarts while 50 runs load and keys are pressed again (reject and queue): every exit code, every byte, every trigger answered, never two runs of one key at once")
    func storm() throws {
        let daemon = try Daemon(config: Self.config)
        let pid = daemon.process.processIdentifier
        var next = 1
        var busy = 0
        var queued: Set<String> = []
        // The run id each answered press of `job` printed: the runs of `job` must be exactly these.
        var printed: [String] = []
        func answered(_ answer: Output) -> Bool {
            guard answer.code == 0, let id = Int(answer.stdout.dropLast()) else { return false }
            printed.append(String(id))
            return true
        }
        func press() throws {
            let n = next
            next += 1
            let answer = try daemon.baton("run", "job", "-p", "n=\(n)", "-p", "s=\(Self.sleep(n))", "--detach")
            let ok = answered(answer)
            #expect(ok, "trigger \(n): \(answer)")
        }
        // A key pressed before, likely still in flight: refused (busy) while it is, a new run once it ended.
        func pressAgain(_ n: Int) throws {
            let answer = try daemon.baton("run", "job", "-p", "n=\(n)", "-p", "s=\(Self.sleep(n))", "--detach")
            if answer.code == 75 { busy += 1; return }
            let ok = answered(answer)
            #expect(ok, "again \(n): \(answer)")
        }
        // `queue`: a follow-up made or joined, never refused.
        func pressQueue(_ k: Int) throws {
            let answer = try daemon.baton("run", "line", "-p", "n=\(k)", "--detach")
            #expect(answer.code == 0 && Int(answer.stdout.dropLast()) != nil, "queue \(k): \(answer)")
            queued.insert(String(answer.stdout.dropLast()))
        }
        for _ in 1...10 { try press() }
        for round in 1...20 {
            daemon.signal(SIGUSR2)
            try daemon.waitForLog("restarting in place:", count: round)
            // During the restart: waits in the backlog for the new batond (or is answered by the old one).
            try press()
            try pressAgain(next - 3)
            try pressQueue(round % 3)
            try daemon.waitForLog(" ready: ", count: round + 1)
            try press()
            try pressAgain(next - 2)
            try pressQueue(round % 3)
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
        for run in try SurviveTests.column(connection, "SELECT id FROM runs ORDER BY id") { _ = try daemon.baton("wait", run) }
        // Every run of `job` (a key's first, or a press again after its end) ends as its n says, with every byte.
        let jobs = try SurviveTests.column(connection, "SELECT id || ' ' || substr(key, 7) || ' ' || phase || ' ' || coalesce(exit_code, '-') FROM runs WHERE action = 'job' ORDER BY id")
        var keys: Set<Int> = []
        for row in jobs {
            let fields = row.split(separator: " ").map(String.init)
            guard fields.count == 4, let id = Int(fields[0]), let n = Int(fields[1]) else { Issue.record("a run of job: \(row)"); continue }
            keys.insert(n)
            let want = Self.expected(n)
            #expect(fields[2...] == [want.code == 0 ? "success" : "failure", "\(want.code)"], "run \(id) (n=\(n)): \(row)")
            let got = try SurviveTests.output(connection, run: id)
            #expect(SurviveTests.hash(got) == SurviveTests.hash(Data(want.output.utf8)), "run \(id)'s output (n=\(n)): \(SurviveTests.sample(got))")
        }
        #expect(keys == Set(1...50), "a run for every key pressed")
        // Every run of job is one a press printed, and every press printed its own run: none made
        // twice (a trigger sent again after it was taken), none without an answer.
        let runs = jobs.compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(Set(printed).count == printed.count, "one run per press: \(printed)")
        #expect(Set(runs) == Set(printed), "runs no press printed: \(Set(runs).subtracting(printed)); printed, not run: \(Set(printed).subtracting(runs))")
        #expect(try SurviveTests.column(connection, "SELECT count(*) FROM triggers WHERE action = 'job'") == ["\(busy)"], "each refusal recorded, no other")
        let lines = try SurviveTests.column(connection, "SELECT id FROM runs WHERE action = 'line' AND phase = 'success'")
        #expect(queued.isSubset(of: Set(lines)), "every queued press's run ran: \(queued.subtracting(lines))")
        #expect(try SurviveTests.column(connection, Self.overlaps).isEmpty, "never two runs of one key at once")
        #expect(busy > 0 || printed.count > 50, "keys were pressed again: \(busy) refused, \(printed.count - 50) run again")
        daemon.stop()
    }
}
