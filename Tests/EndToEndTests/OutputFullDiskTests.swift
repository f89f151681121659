import BatonCore
import BatonIPC
import Foundation
import Testing

/// Output on a full disk (issue 24, item 7): it stops being kept, the run is not failed for it,
/// and no transition is lost.
@Suite("End to end: output on a full disk", .offPool)
struct OutputFullDiskTests {
    @Test("a full disk while a run writes: the chunks that cannot be written are not kept (counted as dropped), the run succeeds, every transition is written")
    func outputOnFullDisk() throws {
        let mount = try SmallDisk.mount("baton-output-full")
        defer { SmallDisk.unmount(mount) }
        let first = try FifoGate(), second = try FifoGate()
        let script = #"echo first; cat "$G1" > /dev/null; head -c 400000 /dev/zero | tr '\0' x; echo; cat "$G2" > /dev/null; echo last"#
        let quoted = String(decoding: try JSONEncoder().encode(script), as: UTF8.self)
        let daemon = try Daemon(config: """
            { actions: { noisy: { exec: ["sh", "-c", \(quoted)], env: { G1: "\(first.path)", G2: "\(second.path)" } } } }
            """, database: mount + "/history.sqlite")
        let database = mount + "/history.sqlite"
        #expect(try daemon.baton("run", "noisy", "-d").stdout == "1\n")
        // `first` is committed before the disk fills.
        try Eventually.value("baton logs 1 says first", { try daemon.baton("logs", "1").stdout }) { $0 == "first\n" }

        _ = try execute("/usr/bin/dd", ["if=/dev/zero", "of=\(mount)/filler", "bs=4096"])
        first.release()
        // The first write of the x's fails: its chunks are left out from then on.
        try daemon.waitForLog("the history cannot be written")
        second.release()
        try FileManager.default.removeItem(atPath: mount + "/filler")
        let ended = try Client(path: daemon.socket).call(Request(op: .wait, run: 1)).run
        #expect(ended?.phase == .success, "\(String(describing: ended))")
        daemon.stop()

        let rows = try execute("/usr/bin/sqlite3", [database, """
            SELECT group_concat(to_phase, ' ') FROM (SELECT to_phase FROM transitions WHERE run_id = 1 ORDER BY seq);
            SELECT total, dropped, total - (SELECT sum(length(bytes)) FROM output_chunks WHERE run_id = 1) FROM output_totals WHERE run_id = 1;
            PRAGMA integrity_check;
            """]).stdout.split(separator: "\n").map(String.init)
        #expect(rows.first == "queued loading success", "\(rows)")
        let totals = rows.count > 1 ? rows[1].split(separator: "|").compactMap { Int64($0) } : []
        // Every byte written is counted; what is missing is what `dropped` says, and some is.
        #expect(totals.count == 3 && totals[0] == 6 + 400_001 + 5, "\(rows)")
        #expect(totals.count == 3 && totals[1] == totals[2] && totals[1] > 0, "\(rows)")
        #expect(rows.last == "ok")
        let restarted = try Daemon(config: #"{ actions: { noisy: { exec: ["true"] } } }"#, reusing: daemon, name: "restarted")
        let logs = try restarted.baton("logs", "1").stdout
        #expect(logs.hasPrefix("first\n") && logs.hasSuffix("last\n"), "\(logs.prefix(20))…\(logs.suffix(20))")
    }
}
