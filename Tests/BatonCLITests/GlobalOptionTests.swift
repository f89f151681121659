@testable import baton
import BatonIPC
import BatonStore
import Foundation
import Testing

@Suite("Global options anywhere; the file fallback follows the socket")
struct GlobalOptionTests {
    func command(_ name: String) throws -> CommandSpec {
        try #require(CommandList.all.first { $0.name == name })
    }

    @Test("--socket and --database are taken after the command, between its options, and as --opt=value")
    func anywhere() throws {
        let history = try command("history").parse(["deploy", "--database", "/tmp/h.sqlite", "-n", "1"])
        #expect(history.value("database") == "/tmp/h.sqlite")
        #expect(history.positionals == ["deploy"])
        #expect(history.value("limit") == "1")
        let run = try command("run").parse(["x", "--socket=/tmp/s.sock", "-p", "a=b", "--socket", "/tmp/t.sock"])
        #expect(run.value("socket") == "/tmp/t.sock", "the last one wins")
        #expect(run.all("param") == ["a=b"])
        // A value that looks like the option is a value; after `--` nothing is an option.
        #expect(try command("run").parse(["x", "-p", "--socket"]).value("socket") == nil)
        #expect(try command("history").parse(["--", "--database"]).positionals == ["--database"])
        #expect(throws: UsageError.self) { try command("history").parse(["--database"]) }
    }

    @Test("a param given twice is a usage error naming it, for run and history alike", arguments: ["run", "history"])
    func paramTwice(name: String) throws {
        let parsed = try command(name).parse(["x", "-p", "a=1", "-p", "b=2", "--param", "a=3"])
        #expect(throws: UsageError("baton \(name): --param a is given twice (a=1, then a=3): give each param once")) {
            try parsed.pairs("param", command: name)
        }
        #expect(try command(name).parse(["x", "-p", "a=1", "-p", "A=2", "-p", "b=a=1"]).pairs("param", command: name) == ["a": "1", "A": "2", "b": "a=1"])
    }

    @Test("every command's help and completions list the global options")
    func documented() {
        for spec in CommandList.all {
            #expect(spec.help.contains("Global options:\n"), "\(spec.name)")
            #expect(spec.help.contains("--socket PATH") && spec.help.contains("--database PATH"), "\(spec.name)")
        }
        let bash = CompletionCommand.bash(CommandList.all), zsh = CompletionCommand.zsh(CommandList.all)
        #expect(bash.contains("history) opts=\"") && bash.contains("--socket --database --help\""))
        #expect(zsh.components(separatedBy: "'--database[").count > CommandList.all.count)
    }

    @Test("with batond down, the system daemon's socket reads the system's history; any other socket the user's own")
    func fallbackFollowsSocket() {
        #expect(Context(socketPath: SocketPath.system, databasePath: nil).fallbackDatabasePath == DatabasePath.system)
        #expect(DatabasePath.system == "/var/lib/baton/history.sqlite")
        #expect(Context(socketPath: "/tmp/own.sock", databasePath: nil).fallbackDatabasePath == DatabasePath.default())
    }
}
