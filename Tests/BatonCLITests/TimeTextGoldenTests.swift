import BatonCore
import BatonStore
import Foundation
import Testing

/// The CLI's times and durations, byte for byte as the Foundation build wrote them (the golden
/// files were made by main's release `baton` at fbebf08, before FoundationEssentials): a history
/// whose runs straddle both of New York's 2026 clock changes, read in UTC and in New York.
@Suite("CLI time text: golden files in UTC and America/New_York across DST", .offPool)
struct TimeTextGoldenTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    /// The baton that writes the text; BATON_GOLDEN_BATON names another (to make the files).
    static let baton = ProcessInfo.processInfo.environment["BATON_GOLDEN_BATON"]
        ?? directory.appendingPathComponent("../../.build/debug/baton").standardizedFileURL.path

    /// Seconds since 1970 of a UTC time.
    static func utc(_ year: Int32, _ month: Int32, _ day: Int32, _ hour: Int32, _ minute: Int32, _ second: Int32) -> Int64 {
        var fields = tm()
        fields.tm_year = year - 1900; fields.tm_mon = month - 1; fields.tm_mday = day
        fields.tm_hour = hour; fields.tm_min = minute; fields.tm_sec = second
        return Int64(timegm(&fields)) * 1_000_000
    }

    /// (id, action, queued at, ended after µs or nil for cancelled while queued, phase, error).
    static let runs: [(Int64, String, Int64, Int64?, Phase, String?)] = [
        // 01:30 EDT, two hours on to 02:30 EST: the hour the clocks go back is in the middle.
        (1, "backup", utc(2026, 11, 1, 5, 30, 0) + 250_000, 7_200_000_000, .success, nil),
        // 01:30 EST, the second 01:30 of that night.
        (2, "backup", utc(2026, 11, 1, 6, 30, 0), 65_432_100, .failure, "exited with status 3"),
        // 01:59:59 EST to 03:00:01 EDT: two seconds across the hour the clocks skip.
        (3, "deploy", utc(2026, 3, 8, 6, 59, 59), 2_000_000, .success, nil),
        (4, "deploy", utc(2026, 3, 8, 7, 30, 0) + 999_999, nil, .cancelled, nil),
        (5, "build", utc(2026, 12, 31, 23, 59, 59), 90_061_000_000, .success, nil),
    ]

    static func seed(_ path: String) async throws {
        let store = try Store(path: path, options: .init(synchronous: .off))
        for (id, action, queuedAt, length, phase, error) in runs {
            let queued = Timestamp(microseconds: queuedAt)
            let run = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .queue, params: [:],
                                  trigger: Peer(uid: 0, gid: 0, pid: 1), queuedAt: queued)
            var entries: [JournalEntry] = [.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: queued))]
            if let length {
                let started = Timestamp(microseconds: queuedAt + 1_000)
                entries.append(.transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: started,
                                                      detail: TransitionDetail(attempt: 1))))
                entries.append(.transition(Transition(runID: id, seq: 3, from: .loading, to: phase, at: Timestamp(microseconds: started.rawValue + length),
                                                      detail: TransitionDetail(reason: "exit", exitCode: phase == .success ? 0 : 3, error: error))))
            } else {
                entries.append(.transition(Transition(runID: id, seq: 2, from: .queued, to: .cancelled, at: queued,
                                                      detail: TransitionDetail(reason: "cancelled", by: 0))))
            }
            await withCheckedContinuation { continuation in store.enqueue(entries) { _ in continuation.resume() } }
        }
        store.close()
    }

    /// What each reading command writes for the seeded history, in `zone`.
    static func text(database: String, zone: String) throws -> String {
        let commands: [[String]] = [
            ["history"], ["history", "--utc"], ["history", "--format", "csv"], ["history", "--format", "csv", "--utc"],
            ["history", "--json"], ["history", "--format", "ndjson"],
            ["show", "1"], ["show", "2"], ["show", "3"], ["show", "4"], ["show", "5", "--json"],
        ]
        return try commands.map { arguments in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: baton)
            process.arguments = ["--socket", database + ".nobody.sock", "--database", database] + arguments
            process.environment = ["TZ": zone, "PATH": "/usr/bin:/bin", "COLUMNS": "160", "NO_COLOR": "1"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = out
            try process.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return "$ baton \(arguments.joined(separator: " "))  (exit \(process.terminationStatus))\n\(text)"
        }.joined(separator: "\n")
    }

    @Test("history and show write the golden text, in UTC and in New York across both clock changes",
          arguments: [("UTC", "time-text.UTC.golden"), ("America/New_York", "time-text.New_York.golden")])
    func golden(zone: String, file: String) async throws {
        let directory = NSTemporaryDirectory() + "baton-golden-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.seed(directory + "/history.sqlite")
        let actual = try Self.text(database: directory + "/history.sqlite", zone: zone)
        let golden = Self.directory.appendingPathComponent(file)
        if ProcessInfo.processInfo.environment["BATON_WRITE_GOLDEN"] == "1" {
            try actual.write(to: golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: golden, encoding: .utf8)
        #expect(actual == expected)
    }
}
