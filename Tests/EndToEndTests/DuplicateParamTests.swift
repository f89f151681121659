import BatonCore
import BatonIPC
import Foundation
import Testing

/// A param given twice (issue 21, item 20): on the socket the first value won silently, on the
/// CLI the last. Both are refused now, naming the param, and nothing runs.
@Suite("End to end: a param given twice", .offPool)
struct DuplicateParamTests {
    static let config = #"{ socketMode: "0600", actions: { a: { exec: ["true"], params: { a: {}, b: { default: "x" } } } } }"#

    @Test("baton run -p a=1 -p a=2 is a usage error naming the param; nothing is triggered")
    func cli() throws {
        let daemon = try Daemon(config: Self.config)
        let twice = try daemon.baton("run", "a", "-p", "a=1", "-p", "a=2")
        #expect(twice.code == 2)
        #expect(twice.stderr.hasPrefix("Error: baton run: --param a is given twice (a=1, then a=2): give each param once\n"), "\(twice.stderr)")
        let history = try daemon.baton("history", "--param", "a=1", "-p", "a=1")
        #expect(history.code == 2)
        #expect(try daemon.baton("history", "--format", "csv").stdout.split(separator: "\n").count == 1, "only the header")
    }

    @Test("on the socket, params and filter.params with a key twice are bad_request naming it, with the request's id")
    func socket() throws {
        let daemon = try Daemon(config: Self.config)
        let client = try Client(path: daemon.socket)
        for (line, message) in [
            (#"{"id":3,"op":"trigger","action":"a","params":{"a":"1","a":"2"}}"#, "param a is given twice: give each param once"),
            (#"{"id":4,"op":"trigger","action":"a","params":{"a":"1","b":"y","\u0062":"z"}}"#, "param b is given twice: give each param once"),
            (#"{"id":5,"op":"history","filter":{"params":{"a":"1","a":"2"}}}"#, "filter.params: param a is given twice: give each param once"),
        ] {
            try client.sendRaw(Data((line + "\n").utf8))
            let answer = try JSONDecoder().decode(Response.self, from: Data(try #require(try client.receiveLine(timeout: .seconds(10)))))
            #expect(answer.error?.code == .badRequest, "\(line)")
            #expect(answer.error?.message == message, "\(line)")
            #expect(answer.id != nil)
        }
        let ran = try client.call(Request(op: .history))
        #expect(ran.runs?.isEmpty == true, "no trigger ran")
    }
}
