import BatonCore
import BatonIPC
import Foundation
import Testing

/// The smallest request docs/protocol.md documents for each operation is answered (issue 12,
/// item 6: optional fields were required), and every limit is the same wherever it applies.
@Suite("End to end: the smallest documented request of each operation", .offPool)
struct ProtocolTests {
    static let requests: [(String, String)] = [
        (#"{"op":"ping"}"#, #""version""#),
        (#"{"op":"trigger","action":"a"}"#, #""decision":"created""#),
        (#"{"op":"status"}"#, #""actions""#),
        (#"{"op":"actions"}"#, #""actions""#),
        (#"{"op":"history"}"#, #""runs""#),
        (#"{"op":"history","filter":{}}"#, #""runs""#),
        (#"{"op":"history","filter":{"limit":5}}"#, #""runs""#),
        (#"{"op":"history","filter":{"actions":["a"]}}"#, #""runs""#),
        (#"{"op":"stats"}"#, #""stats""#),
        (#"{"op":"stats","action":"a"}"#, #""stats""#),
        (#"{"op":"stats","filter":{"actions":["a"]}}"#, #""stats""#),
        (#"{"op":"denied"}"#, #""triggers""#),
        (#"{"op":"denied","filter":{"limit":5}}"#, #""triggers""#),
        (#"{"op":"prune"}"#, #""prune""#),
        (#"{"op":"search","text":"x"}"#, #""matches""#),
        (#"{"op":"reload"}"#, #""ok":true"#),
        (#"{"op":"cancel","action":"a"}"#, #""runs""#),
        (#"{"op":"watch"}"#, #""event":"watching""#),
        (#"{"op":"approvals"}"#, #""runs""#),
    ]

    @Test("each operation with only its required fields", arguments: requests)
    func smallest(request: String, expected: String) throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        let client = try Client(path: daemon.socket)
        try client.sendRaw(Data((request + "\n").utf8))
        var line = ""
        while !line.contains(#""ok":"#) && !line.contains("watching") {
            line = String(decoding: try #require(try client.receiveLine(timeout: .seconds(10))), as: UTF8.self)
        }
        #expect(line.contains(expected), "\(request) → \(line)")
        #expect(!line.contains(#""ok":false"#), "\(request) → \(line)")
    }

    @Test("limits are the same for every operation that takes a filter", arguments: ["history", "stats", "denied"])
    func limits(op: String) throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        for limit in ["-1", "1000000000000"] {
            let answer = try Client(path: daemon.socket).call(Request(op: Operation(rawValue: op)!, filter: try JSONDecoder().decode(
                HistoryFilter.self, from: Data(#"{"limit":\#(limit)}"#.utf8))))
            #expect(answer.error?.code == .badRequest, "\(op) with limit \(limit)")
            #expect(answer.error?.message.contains("filter.limit must be from 0 to 100000") == true)
        }
    }

    @Test("a request with a field of the wrong type names the field and the JSON kind, never a Swift type")
    func wrongTypes() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        let client = try Client(path: daemon.socket)
        for (request, expected) in [(#"{"op":"trigger","action":"a","params":{"k":1}}"#, "params.k: expected a string"),
                                    (#"{"op":"show","run":"x"}"#, "run: expected a whole number"),
                                    (#"{"op":"trigger","action":"a","params":[1]}"#, "params: expected an object")] {
            try client.sendRaw(Data((request + "\n").utf8))
            let line = String(decoding: try #require(try client.receiveLine(timeout: .seconds(10))), as: UTF8.self)
            #expect(line.contains(expected), "\(request) → \(line)")
            #expect(!line.contains("Dictionary") && !line.contains("Int64") && !line.contains("Swift"), "\(line)")
        }
    }
}

@Suite("End to end: a watcher that goes away", .offPool)
struct WatcherHangUpTests {
    /// Found with the dashboard: a client that closed its connection during a `watch` left batond's
    /// socket thread woken by the hang-up forever (100% of a CPU) and the connection never dropped.
    @Test("a watcher that closes its connection is dropped, and batond's socket thread goes quiet")
    func closedWatcherIsDropped() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        func connections() throws -> Int? {
            let text = try Client(path: daemon.socket).call(Request(op: .metrics)).metrics ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix("baton_connections ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        #expect(try connections() == 1, "only the asking connection")
        do {
            let watcher = try Client(path: daemon.socket)
            try watcher.send(Request(op: .watch))
            #expect(try watcher.receive(timeout: .seconds(10))?.event == "watching")
            #expect(try connections() == 2)
        }   // closed here
        // The drop happens when batond's thread sees the hang-up; ask until it has.
        try Eventually.value("the closed watcher's connection gone", within: 30, { try connections() }) { $0 == 1 }
        // And the socket thread sleeps: it used well under a second of CPU over the test.
        let stat = try String(contentsOfFile: "/proc/\(daemon.process.processIdentifier)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ") ")!.upperBound...].split(separator: " ")
        let ticks = (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        #expect(ticks < Int(sysconf(Int32(_SC_CLK_TCK))), "batond used \(ticks) clock ticks")
    }
}
