import BatonCore
@testable import BatonStore
import Dispatch
import Foundation
import Testing

/// A search is bounded: a scan reads at most its budget of output and says where it stopped, it
/// stops when its asker has gone, and it runs on a connection of its own, so a long one never
/// holds up the history reads of others.
@Suite("Search bounds")
struct SearchBoundTests {
    /// Runs 1...5, each with 100 bytes of output; only run 1 (the oldest) holds "needle".
    static func filled(_ path: String) async throws -> Store {
        let store = try OutputSearchTests.open(path, index: false)
        for id in Int64(1)...5 {
            let line = id == 1 ? "needle" : "filler"
            // 14 lines of 7 bytes and ".\n": 100 bytes.
            try await OutputSearchTests.run(store, id, output: [String(repeating: line + "\n", count: 14) + ".\n"])
        }
        return store
    }

    @Test("a scan past its budget answers what it found and where it stopped; within it, no cut")
    func budget() async throws {
        let dir = TemporaryDirectory()
        let store = try await Self.filled(dir.file("h.sqlite"))
        defer { store.close() }
        let cut = try await store.read { try $0.search("needle", HistoryFilter(limit: 20), budget: 250) }
        #expect(cut.matches.isEmpty, "the oldest run's output is past the budget")
        #expect(cut.cut == SearchCut(scannedBytes: 300, run: 3), "\(String(describing: cut.cut))")
        let whole = try await store.read { try $0.search("needle", HistoryFilter(limit: 20), budget: 500) }
        #expect(whole.matches.map(\.run.id) == [1])
        #expect(whole.cut == nil)
    }

    @Test("a search whose asker has gone stops at the next chunk")
    func stopsWhenAskerGoes() async throws {
        let dir = TemporaryDirectory()
        let store = try await Self.filled(dir.file("h.sqlite"))
        defer { store.close() }
        let asked = Locked(0)
        let stopped = try await store.search("needle", HistoryFilter(limit: 20), stop: {
            asked.withLock { $0 += 1 }
            return true
        })
        #expect(stopped.matches.isEmpty && stopped.cut == nil)
        #expect(asked.withLock { $0 } == 1, "asked once, after the first chunk")
        #expect(try await store.search("needle", HistoryFilter(limit: 20), stop: { false }).matches.map(\.run.id) == [1])
    }

    @Test("a search held mid-scan does not hold up a history read")
    func ownConnection() async throws {
        let dir = TemporaryDirectory()
        let store = try await Self.filled(dir.file("h.sqlite"))
        defer { store.close() }
        let (entered, gate, answered) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        defer { gate.signal() }
        let search = Task {
            try await store.search("needle", HistoryFilter(limit: 20), stop: {
                entered.signal()
                gate.wait()
                return false
            })
        }
        guard await Eventually.signalled("the search reads its first chunk", entered) else { return }
        Task {
            _ = try await store.runs(HistoryFilter(limit: 5))
            answered.signal()
        }
        guard await Eventually.signalled("the read is answered while the search is held", answered) else { return }
        for _ in 0..<5 { gate.signal() }
        #expect(try await search.value.matches.map(\.run.id) == [1])
    }
}
