import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// What a run's processes used, on the run's row: migration 3, the writer's sums and maxima,
/// and the stats' percentiles.
@Suite("Run usage in the history")
struct RunUsageTests {
    static let now = Timestamp(rawValue: 1_800_000_000_000_000)

    /// The transitions of a run whose attempts end with these figures (cpu user, system, memory),
    /// the last one ending the run as `end`.
    static func transitions(run id: Int64, attempts: [(Int64?, Int64?, Int64?)], end: Phase = .failure) -> [Transition] {
        var list: [Transition] = []
        var seq = 1
        func add(_ from: Phase?, _ to: Phase, _ detail: TransitionDetail) {
            list.append(Transition(runID: id, seq: seq, from: from, to: to, at: now + .seconds(seq), detail: detail))
            seq += 1
        }
        add(nil, .queued, .init())
        for (index, figures) in attempts.enumerated() {
            add(index == 0 ? .queued : .retrying, .loading, TransitionDetail(attempt: index + 1))
            var detail = TransitionDetail(reason: "exit", attempt: index + 1, exitCode: 1)
            detail.cpuUser = figures.0
            detail.cpuSystem = figures.1
            detail.memoryPeak = figures.2
            add(.loading, index == attempts.count - 1 ? end : .retrying, detail)
        }
        return list
    }

    static func write(_ transitions: [Transition], action: String = "a", to store: Store) async throws {
        let id = transitions[0].runID
        let run = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: now)
        try await store.commit([.created(run, transitions[0])]).get()
        for transition in transitions.dropFirst() { try await store.commit([.transition(transition)]).get() }
    }

    @Test("the run's row sums its attempts' CPU and keeps their largest memory peak, as the live snapshot does",
          arguments: [
              [(Int64(100), Int64(50), Int64(1_000)), (200, 20, 500)],
              [(nil, nil, nil), (300, 10, 4_096)],
              [(7, 3, nil)],
              [(nil, nil, nil)],
          ] as [[(Int64?, Int64?, Int64?)]])
    func sums(_ attempts: [(Int64?, Int64?, Int64?)]) async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        let transitions = Self.transitions(run: 1, attempts: attempts)
        try await Self.write(transitions, to: store)
        let stored = try #require(try await store.read { try $0.run(1) }).run
        let users = attempts.compactMap(\.0), systems = attempts.compactMap(\.1), peaks = attempts.compactMap(\.2)
        #expect(stored.cpuUser == (users.isEmpty ? nil : users.reduce(0, +)))
        #expect(stored.cpuSystem == (systems.isEmpty ? nil : systems.reduce(0, +)))
        #expect(stored.memoryPeak == peaks.max())
        var live = RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: Self.now)
        for transition in transitions.dropFirst() { live = live.applying(transition) }
        #expect(live.cpuUser == stored.cpuUser && live.cpuSystem == stored.cpuSystem && live.memoryPeak == stored.memoryPeak)
        #expect(try await store.read { try $0.runs(HistoryFilter()) }.first?.memoryPeak == peaks.max())
    }

    @Test("stats give p50 and p95 of the ended runs' CPU (user + system) and peak memory; unmeasured runs are left out")
    func stats() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        for id in Int64(1)...20 {
            try await Self.write(Self.transitions(run: id, attempts: [(id * 1_000, id * 100, id * 1_048_576)], end: id % 2 == 0 ? .success : .failure),
                                 to: store)
        }
        try await Self.write(Self.transitions(run: 21, attempts: [(nil, nil, nil)]), to: store)
        try await Self.write(Self.transitions(run: 22, attempts: [(999_000, 0, 999)]), action: "other", to: store)
        let stats = try #require(try await store.read { try $0.stats(actions: ["a"]) }.first)
        #expect(stats.cpuP50 == Int64(10 * 1_100))
        #expect(stats.cpuP95 == Int64(19 * 1_100))
        #expect(stats.memoryP50 == Int64(10 * 1_048_576))
        #expect(stats.memoryP95 == Int64(19 * 1_048_576))
        let none = try #require(try await store.read { try $0.stats(actions: ["missing"]) }.first)
        #expect(none.cpuP50 == nil && none.memoryP95 == nil)
    }

    @Test("a version-2 history migrates to version 3 and on: its runs read as before, with no figures")
    func migration() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        try OldHistory.make(at: path, version: 2) { try $0.execute(OldHistory.endedRun) }
        let store = try Store(path: path)
        store.close()
        let connection = try Connection(path: path, readOnly: true)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        let run = try #require(try History(connection: connection).run(1)).run
        #expect(run.phase == .success && run.exitCode == 0)
        #expect(run.cpuUser == nil && run.cpuSystem == nil && run.memoryPeak == nil)
    }
}
