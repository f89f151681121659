import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// `search` on a real SQLite file: the trigram index (`searchIndex`) kept in step with the chunks
/// the writer commits, the window slides out of it and retention prunes it, the store makes it for
/// a history that lacks it and drops it when not asked, the scan finds what the index finds, and
/// the matching lines come back with their numbers.
@Suite("Output search in the store")
struct OutputSearchTests {
    static let now = Timestamp.now

    /// A run of `action` in `phase` with `params`, its output written as these chunks (contiguous from 0).
    static func run(_ store: Store, _ id: Int64, action: String = "deploy", phase: Phase = .failure,
                    params: [String: String] = [:], output: [String]) async throws {
        let snapshot = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: params,
                                   trigger: nil, queuedAt: now)
        var entries: [JournalEntry] = [
            .created(snapshot, Transition(runID: id, seq: 1, from: nil, to: .queued, at: now, detail: .init())),
            .transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: now, detail: .init(attempt: 1))),
            .transition(Transition(runID: id, seq: 3, from: .loading, to: phase, at: now, detail: .init())),
        ]
        var start: Int64 = 0
        let chunks = output.map { text in
            defer { start += Int64(text.utf8.count) }
            return OutputChunk(start: start, stream: .stdout, at: now, bytes: Array(text.utf8))
        }
        entries.append(.outputChunks(OutputWrite(runID: id, chunks: chunks, removeBefore: nil, head: 1 << 20, total: start, dropped: 0)))
        try await store.commit(entries).get()
    }

    /// A store on `path`, with the search index or without it.
    static func open(_ path: String, index: Bool = true,
                     changes: (@Sendable (SearchIndex.Change) -> Void)? = nil) throws -> Store {
        var options = Store.Options()
        options.searchIndex = index
        options.willChangeSearchIndex = changes
        return try Store(path: path, options: options)
    }

    static func search(_ store: Store, _ text: String, _ filter: HistoryFilter = HistoryFilter(limit: 20)) async throws -> [SearchMatch] {
        try await store.read { try $0.search(text, filter).matches }
    }

    /// How many rows of the index a MATCH finds (the index itself, not the chunks).
    static func indexed(_ store: Store, _ text: String) async throws -> Int64 {
        try await store.read { history in
            try history.connection.scalar("SELECT count(*) FROM output_search WHERE output_search MATCH ?",
                                          [.text("\"\(text)\"")])?.int64 ?? -1
        }
    }

    @Test("the chunks the writer commits are found at once, case ignored, newest first, with their lines and numbers")
    func keptInStep() async throws {
        let dir = TemporaryDirectory()
        let store = try Self.open(dir.file("h.sqlite"))
        defer { store.close() }
        try await Self.run(store, 1, output: ["starting\ncurl: (7) Connection refused\n", "retrying\nconnection REFUSED again\n"])
        try await Self.run(store, 2, action: "backup", phase: .success, output: ["all good\n"])
        try await Self.run(store, 3, output: ["line one\nline two: connection refused"])
        let found = try await Self.search(store, "connection refused")
        #expect(found.map(\.run.id) == [3, 1])
        #expect(found[1].lines == [MatchedLine(line: 2, text: "curl: (7) Connection refused"), MatchedLine(line: 4, text: "connection REFUSED again")])
        #expect(found[1].lineCount == 2)
        #expect(found[0].lines == [MatchedLine(line: 2, text: "line two: connection refused")])
        #expect(try await Self.search(store, "all good").map(\.run.id) == [2])
        #expect(try await Self.search(store, "nothing like it").isEmpty)
        // The filter's action and phase apply.
        #expect(try await Self.search(store, "connection", HistoryFilter(actions: ["backup"])).isEmpty)
        #expect(try await Self.search(store, "good", HistoryFilter(phases: [.success])).map(\.run.id) == [2])
        #expect(try await Self.search(store, "refused", HistoryFilter(limit: 1)).map(\.run.id) == [3])
    }

    @Test("a line cut across two chunks is one line; a text shorter than three characters is a scan; params match too")
    func linesParamsAndShortText() async throws {
        let dir = TemporaryDirectory()
        let store = try Self.open(dir.file("h.sqlite"))
        defer { store.close() }
        try await Self.run(store, 1, params: ["env": "production-eu"], output: ["a\nhalf of a lo", "ng line\nok\n"])
        let long = try await Self.search(store, "lo")
        #expect(long.map(\.run.id) == [1])
        #expect(long[0].lines == [MatchedLine(line: 2, text: "half of a long line")])
        let byParam = try await Self.search(store, "PRODUCTION")
        #expect(byParam.map(\.run.id) == [1])
        #expect(byParam[0].params == ["env"] && byParam[0].lineCount == 0)
        // LIKE's wildcards are the text's own characters.
        #expect(try await Self.search(store, "%").isEmpty)
    }

    @Test("chunks that slide out of the kept window leave the index; retention's deletes empty it")
    func prunedWithTheChunks() async throws {
        let dir = TemporaryDirectory()
        let store = try Self.open(dir.file("h.sqlite"))
        defer { store.close() }
        try await Self.run(store, 1, phase: .success, output: ["early marker zebra\n", "late marker yak\n"])
        #expect(try await Self.indexed(store, "zebra") == 1)
        // The window slides: the first chunk is removed as the limiter's write says.
        try await store.commit([.outputChunks(OutputWrite(runID: 1, chunks: [], removeBefore: 19, head: 0, total: 35, dropped: 19))]).get()
        #expect(try await Self.indexed(store, "zebra") == 0)
        #expect(try await Self.search(store, "zebra").isEmpty)
        let after = try await Self.search(store, "yak")
        #expect(after.first?.lines.first?.afterCut == true)
        let report = try await store.prune(retention: Retention(maxAge: .seconds(1), keepFailures: .seconds(1), maxRunsPerAction: 1),
                                           now: Self.now + .seconds(3_600))
        #expect(report.removed == ["deploy": 1])
        #expect(try await Self.indexed(store, "yak") == 0)
        let check = try await store.perform { connection in
            try connection.execute("INSERT INTO output_search (output_search, rank) VALUES ('integrity-check', 1)")
        }
        _ = check
    }

    @Test("opening a history without the index with search: index builds it from the chunks it has; the CLI scans before")
    func openBuildsIt() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let old = try Connection(path: path)
        try old.execute("PRAGMA foreign_keys = ON")
        #expect(try Migrator.migrate(old, migrations: Migrator.migrations.filter { $0.version <= 9 }).last == 9)
        try old.execute("""
            INSERT INTO runs (id, action, key, phase, policy, params, queued_at) VALUES (5, 'deploy', 'deploy', 'failure', 'reject', '{}', 1);
            INSERT INTO output_chunks (run_id, start, stream, at, bytes) VALUES (5, 0, 1, 1, CAST('ok\nERROR: disk full\n' AS BLOB));
            INSERT INTO output_totals (run_id, total, dropped, head) VALUES (5, 19, 0, 1000);
            """)
        // Read as the CLI reads it while batond is down, before any batond opened it: a scan.
        let scanned = try History.openReadOnly(path: path).search("disk full", HistoryFilter()).matches
        #expect(scanned.map(\.run.id) == [5])
        let changes = Locked<[SearchIndex.Change]>([])
        let store = try Self.open(path, changes: { change in changes.withLock { $0.append(change) } })
        defer { store.close() }
        #expect(changes.withLock { $0 } == [.building(chunks: 1, bytes: 20)])
        #expect(try await Self.indexed(store, "disk full") == 1)
        let found = try await Self.search(store, "disk full")
        #expect(found.map(\.run.id) == [5])
        #expect(found.first?.lines == [MatchedLine(line: 2, text: "ERROR: disk full")])
    }

    /// The names of the index's table and triggers in the file.
    static func indexObjects(_ path: String) throws -> [String] {
        let connection = try Connection(path: path)
        return try connection.withStatement("SELECT name FROM sqlite_master WHERE name LIKE 'output_search%' AND type IN ('table', 'trigger') ORDER BY name") { s in
            var names: [String] = []
            while try s.step() { names.append(s.string(0) ?? "") }
            return names.filter { !$0.hasPrefix("output_search_") || ["output_search_insert", "output_search_delete", "output_search_update"].contains($0) }
        }
    }

    @Test("the store makes the index at open when asked, drops it when not, and does nothing when the file has what is asked")
    func madeAndDroppedPerSetting() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let changes = Locked<[SearchIndex.Change]>([])
        let record: @Sendable (SearchIndex.Change) -> Void = { change in changes.withLock { $0.append(change) } }
        let all = ["output_search", "output_search_delete", "output_search_insert", "output_search_update"]
        // The default is no index: a new history has none.
        let plain = try Store(path: path)
        try await Self.run(plain, 1, output: ["first run: Connection Refused\n"])
        plain.close()
        #expect(try Self.indexObjects(path) == [])
        for (index, objects, change) in [(true, all, SearchIndex.Change.building(chunks: 1, bytes: 30)), (true, all, nil),
                                         (false, [], .dropping), (false, [], nil), (true, all, .building(chunks: 1, bytes: 30))] {
            changes.withLock { $0 = [] }
            let store = try Self.open(path, index: index, changes: record)
            #expect(try await Self.search(store, "connection refused").map(\.run.id) == [1])
            store.close()
            #expect(try Self.indexObjects(path) == objects)
            #expect(changes.withLock { $0 } == (change.map { [$0] } ?? []))
        }
        // A part left without the rest (by hand) is made whole.
        try Connection(path: path).execute("DROP TRIGGER output_search_update")
        let store = try Self.open(path, changes: record)
        try await Self.run(store, 2, output: ["second run: connection refused\n"])
        #expect(try await Self.indexed(store, "connection refused") == 2)
        store.close()
        #expect(try Self.indexObjects(path) == all)
    }

    @Test("the same searches on one history find the same runs, lines and counts with the index and without it")
    func sameWithAndWithoutIndex() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        let pieces = ["connection refused", "Connection REFUSED", "retrying request", "ok", "disk full", "\n", "\n", "x",
                      "ünïcode", "ÜNÏCODE", "a long stretch of words ", "id=7f3a ", "%_", "refu", "sed"]
        // No NUL byte: FTS5 reads a chunk as text up to its first NUL, the scan reads it all (said in README).
        let store = try Self.open(path)
        for id in 1...60 {
            let chunks = (0..<(1 + next(4))).map { _ in (0..<next(25)).map { _ in pieces[next(pieces.count)] }.joined() }
            try await Self.run(store, Int64(id), action: ["deploy", "backup", "sync"][next(3)], phase: [.success, .failure][next(2)],
                               params: next(4) == 0 ? ["env": "prod-\(next(3))"] : [:], output: chunks)
        }
        let filters = [HistoryFilter(limit: 20), HistoryFilter(limit: 5), HistoryFilter(actions: ["backup"]),
                       HistoryFilter(phases: [.failure], limit: 3), HistoryFilter(limit: 50)]
        let texts = ["connection refused", "REFUSED", "retrying request", "ok", "x", "%_", "disk full\nok", "ünïcode", "prod-1",
                     "refused", "nowhere at all", "d f"]
        var indexed: [[SearchMatch]] = []
        for text in texts { for filter in filters { indexed.append(try await Self.search(store, text, filter)) } }
        store.close()
        #expect(try Self.indexObjects(path).count == 4)
        let scanning = try Self.open(path, index: false)
        defer { scanning.close() }
        #expect(try Self.indexObjects(path) == [])
        var scanned: [[SearchMatch]] = []
        for text in texts { for filter in filters { scanned.append(try await Self.search(scanning, text, filter)) } }
        #expect(indexed.contains { $0.count >= 5 }, "the searches find something: \(indexed.map(\.count))")
        for (at, (withIndex, withoutIndex)) in zip(indexed, scanned).enumerated() {
            #expect(withIndex == withoutIndex, "\(texts[at / filters.count]) \(filters[at % filters.count])")
        }
    }

    @Test("lines: numbered across chunks, a CR dropped, a long line cut around the match, the lines after a cut marked")
    func matchingLines() {
        var lines = MatchingLines(SearchText("needle"), maxLines: 2)
        lines.take(Array("x\r\nNeedle here\r\n".utf8), at: 0)
        lines.take(Array((String(repeating: "a", count: 1_000) + "needle" + String(repeating: "b", count: 1_000)).utf8), at: 15)
        lines.take(Array("\nneedle after the cut\n".utf8), at: 5_000)
        lines.finish()
        #expect(lines.count == 3)
        #expect(lines.lines.map(\.line) == [2, 3])
        #expect(lines.lines[0].text == "Needle here")
        #expect(lines.lines[1].text.hasPrefix("…a") && lines.lines[1].text.contains("needle") && lines.lines[1].text.hasSuffix("b…"))
        var cut = MatchingLines(SearchText("needle"), maxLines: 5)
        cut.take(Array("first needle\n".utf8), at: 0)
        cut.take(Array("needle late\n".utf8), at: 100)
        cut.finish()
        #expect(cut.lines.map(\.afterCut) == [nil, true])
        #expect(SearchText("Ünïcode").firstMatch(in: Array("say üNÏCODE".utf8)[...]) != nil)
    }

    @Test("the folded copy's way (memchr, memcmp) finds the same lines, numbers and counts as the line-by-line way", arguments: 0..<40)
    func fastPathAgrees(seed: Int) {
        var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
        func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        let pieces = ["needle", "NeEdLe", "nee", "dle", "\n", "\r\n", "x", "a long stretch of words ", "\u{0}", "é"]
        var chunks: [(start: Int64, bytes: [UInt8])] = []
        var position: Int64 = 0
        for _ in 0..<(1 + next(12)) {
            let text = (0..<next(30)).map { _ in pieces[next(pieces.count)] }.joined()
            if next(5) == 0 { position += Int64(1 + next(50)) }  // bytes dropped here
            chunks.append((position, Array(text.utf8)))
            position += Int64(text.utf8.count)
        }
        var slow = MatchingLines(SearchText("needle"), maxLines: 5)
        var fast = MatchingLines(SearchText("needle"), maxLines: 5)
        for chunk in chunks {
            slow.take(chunk.bytes, at: chunk.start)
            fast.take(chunk.bytes, folded: chunk.bytes.map(SearchText.lower), at: chunk.start)
        }
        slow.finish()
        fast.finish()
        #expect(fast.count == slow.count, "\(chunks.map { String(decoding: $0.bytes, as: UTF8.self) })")
        #expect(fast.lines == slow.lines, "\(chunks.map { String(decoding: $0.bytes, as: UTF8.self) })")
    }
}
