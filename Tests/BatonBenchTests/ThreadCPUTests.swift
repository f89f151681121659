@testable import baton_bench
import Testing

/// baton-bench's reading of /proc/PID/task/*/stat and schedstat, and its per-thread differences.
@Suite("batond's CPU by thread")
struct ThreadCPUTests {
    @Test("a stat line: the name between the first ( and the last ), utime + stime in ticks", arguments: [
        ("7201 (baton-spawn) S 7198 7198 2124 0 -1 4194304 100 0 0 0 31 12 0 0 20 0 1 0 2370430", "baton-spawn", 43),
        ("12 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 5 0 0 0 20 0 1 0 9", "a (b) c", 5),
        ("99 (oot.default-qos) S 1 1 1 0 -1 0 0 0 0 0 0 7 0 0 20 0 1 0 9 3133440", "oot.default-qos", 7),
    ])
    func stat(line: String, name: String, ticks: Int) {
        let parsed = ThreadCPU.parse(stat: line)
        #expect(parsed?.name == name)
        #expect(parsed?.ticks == ticks)
    }

    @Test("a stat line cut short, or without a name, is nothing")
    func badStat() {
        #expect(ThreadCPU.parse(stat: "7201 (batond) S 7198 7198") == nil)
        #expect(ThreadCPU.parse(stat: "7201 batond S 1 1 1 0 -1 0 0 0 0 0 5 0 0 0") == nil)
        #expect(ThreadCPU.parse(stat: ") 7201 ( S 1 1 1 0 -1 0 0 0 0 0 5 0 0 0") == nil)
    }

    @Test("a schedstat: the first field, nanoseconds")
    func schedstat() {
        #expect(ThreadCPU.parse(schedstat: "1837362 83635 1\n") == 1_837_362)
        #expect(ThreadCPU.parse(schedstat: "") == nil)
    }

    @Test("a difference is per thread: one born since counts whole, one that ended shows in `ended`")
    func difference() {
        var before = ThreadCPU()
        before.threads = [1: ("baton-reactor", 1.0), 2: ("baton-spawn", 0.5), 3: ("baton-spawn", 0.25)]
        before.total = 1.75
        var after = ThreadCPU()
        // Thread 3 ended after running 0.5 s more; thread 4 was born and ran 0.25 s.
        after.threads = [1: ("baton-reactor", 1.5), 2: ("baton-spawn", 1.0), 4: ("baton-spawn", 0.25)]
        after.total = 3.5
        let batch = after - before
        #expect(batch.loop == 0.5)
        #expect(batch.byName["baton-spawn"] == 0.75)
        #expect(batch.ended == 0.5)
        #expect(batch.others == 1.25)
        let share = batch / 2
        #expect(share.loop == 0.25)
        #expect(share.ended == 0.25)
    }

    @Test("thread names by kind", arguments: [
        ("baton-spawn", 0), ("baton-log", 1), ("baton-store-rea", 2), ("baton-search", 2), ("batond", 3),
        ("oot.default-qos", 4), ("-qos.overcommit", 4), ("baton-artifacts", 5),
    ])
    func kind(name: String, index: Int) {
        #expect(ThreadCPU.kind(of: name) == ThreadCPU.kinds[index])
    }
}
