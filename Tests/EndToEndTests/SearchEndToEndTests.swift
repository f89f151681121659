import BatonClient
import BatonCore
import BatonIPC
import Foundation
import Testing

/// Issue 42, item 2: `baton search` over the socket, through batond's history reader, and from
/// the file when batond is down.
@Suite("End to end: baton search", .offPool)
struct SearchEndToEndTests {
    static let config = Self.config(searching: "scan")

    /// The config, with the search index (`"index"`) or without (`"scan"`, the default).
    static func config(searching search: String) -> String {
        #"""
        { requireUser: false, search: "\#(search)", actions: {
            fetch: { exec: ["sh", "-c", "echo starting; echo \"curl: (7) Connection refused on $BATON_PARAM_HOST\"; exit 7"],
                     params: { host: { pattern: "^[a-z-]+$" } } },
            quiet: { exec: ["sh", "-c", "echo all fine"] } } }
        """#
    }

    @Test("runs whose output holds the text, newest first, with their numbered lines; phase, action and params apply; scan or index",
          arguments: ["scan", "index"])
    func search(setting: String) throws {
        let daemon = try Daemon(config: Self.config(searching: setting))
        #expect(try daemon.baton("run", "fetch", "-p", "host=db-east").code == 1)
        #expect(try daemon.baton("run", "quiet").code == 0)
        #expect(try daemon.baton("run", "fetch", "-p", "host=db-west").code == 1)
        let found = try daemon.baton("search", "connection refused")
        #expect(found.code == 0, "\(found)")
        let runs = found.stdout.split(separator: "\n").filter { $0.hasPrefix("run ") }.map { $0.split(separator: " ")[1] }
        #expect(runs == ["3", "1"], "\(found.stdout)")
        #expect(found.stdout.contains("  2: curl: (7) Connection refused on db-west\n"), "\(found.stdout)")
        #expect(try daemon.baton("search", "connection refused", "--phase", "success").stdout == "no runs match\n")
        #expect(try daemon.baton("search", "fine", "quiet").stdout.hasPrefix("run 2  quiet"))
        let json = try daemon.baton("search", "db-east", "--json")
        let matches = try JSONDecoder().decode([SearchMatch].self, from: Data(json.stdout.utf8))
        #expect(matches.map(\.run.id) == [1], "\(json)")
        #expect(matches.first?.params == ["host"])
        #expect(matches.first?.lines == [MatchedLine(line: 2, text: "curl: (7) Connection refused on db-east")])
        let unknown = try daemon.baton("search", "x", "nope")
        #expect(unknown.code == 2 && unknown.stderr.contains("unknown action"), "\(unknown)")
    }

    @Test("over the socket protocol, a search is one request with its text and filter; batond down, the file answers")
    func protocolAndFile() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "quiet").code == 0)
        let answer = try Client(path: daemon.socket).call(Request(op: .search, filter: HistoryFilter(limit: 5), text: "ALL FINE"))
        #expect(answer.ok == true && answer.matches?.map(\.run.id) == [1], "\(answer)")
        let empty = try Client(path: daemon.socket).call(Request(op: .search))
        #expect(empty.error?.code == .badRequest && empty.error?.message.contains("text") == true)
        daemon.stop()
        let offline = try execute(Binaries.baton, ["--socket", daemon.socket, "--database", daemon.database, "search", "all fine"])
        #expect(offline.code == 0 && offline.stdout.contains("1: all fine"), "\(offline)")
    }

    @Test("BatonClient.search: the same answer from Swift, and an unknown action as BatonClientError")
    func fromSwift() async throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "fetch", "-p", "host=db-east").code == 1)
        let client = try BatonClient(socket: daemon.socket)
        let found = try await client.search("REFUSED on db")
        #expect(found.map(\.run.id) == [1] && found.first?.lines.map(\.line) == [2])
        #expect(try await client.search("refused", HistoryFilter(phases: [.success])).isEmpty)
        await #expect(throws: BatonClientError.self) { try await client.search("x", HistoryFilter(actions: ["nope"])) }
    }
}
