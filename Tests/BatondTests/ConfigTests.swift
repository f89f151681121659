@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config")
struct ConfigTests {
    @Test("the example config is valid")
    func example() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../examples/baton.json5")
        let config = try Config.load(path: url.standardizedFileURL.path)
        #expect(config.actions.map(\.name).contains("hello"))
    }

    @Test("JSON5 with comments and trailing commas is read into actions")
    func parse() throws {
        let config = try Config.parse(Data("""
            // comment
            { maxConcurrentRuns: 3, actions: { build: { exec: ["make"], policy: "join", timeout: "2m", cwd: "/srv",
              env: { CI: "1" }, retry: { attempts: 2, backoff: "1s" }, }, }, }
            """.utf8), file: "t")
        let build = try #require(config.actions.first)
        #expect(config.maxConcurrentRuns == 3)
        #expect(build.exec == ["make"])
        #expect(build.policy == .join)
        #expect(build.timeout == .seconds(120))
        #expect(build.env == ["CI": "1"])
        #expect(build.retry.attempts == 2)
    }

    @Test("each kind of error names its field", arguments: [
        (#"{ actions: { hello: { exec: ["echo"], policy: "rejct" } } }"#,
         #"actions.hello.policy: expected one of reject, join, queue, replace, got "rejct": did you mean "reject"?"#),
        (#"{ actions: { hello: { policy: "join" } } }"#, "actions.hello.exec: missing"),
        (#"{ actions: { hello: { exec: "echo hi" } } }"#, "actions.hello.exec: expected an array of strings, got a string"),
        (#"{ actions: { hello: { exec: ["x"], timeout: "soon" } } }"#, "actions.hello.timeout: expected a duration"),
        (#"{ actions: { hello: { exec: ["x"], timout: "1s" } } }"#, "actions.hello.timout: unknown field: did you mean \"timeout\"? (known: "),
        (#"{ actions: { hello: { exec: ["x"], colour: "1s" } } }"#, "actions.hello.colour: unknown field (known: "),
        (#"{ actoins: { hello: { exec: ["x"] } } }"#, "actoins: unknown field: did you mean \"actions\"? (known: "),
        (#"{ actions: { hello: { exec: ["x"], retry: { attempts: -1 } } } }"#, "actions.hello.retry.attempts: expected a whole number"),
        (#"{ actions: { hello: { exec: ["x"], keyParams: ["env"] } } }"#, "actions.hello.keyParams[0]: \"env\" is not one of the action's params"),
        (#"{ actions: { hello: { exec: ["x"], params: { env: { pattern: "(" } } } } }"#, "actions.hello.params.env.pattern: not a valid pattern: missing )"),
        (#"{ actions: { hello: { exec: ["x"], params: { env: { pattern: "(a)\\1" } } } } }"#, "actions.hello.params.env.pattern: not a valid pattern: backreferences"),
        (#"{ actions: { hello: { exec: ["x"], cwd: "relative" } } }"#, "actions.hello.cwd: expected an absolute path"),
        (#"{ maxConcurrentRuns: 0, actions: { a: { exec: ["x"] } } }"#, "maxConcurrentRuns: expected a whole number from 1"),
        (#"{ actions: [] }"#, "actions: expected an object of actions by name, got an array"),
        (#"{ actions: { "bad name!": { exec: ["x"] } } }"#, "actions.bad name!: an action name is"),
        (#"{ actions: "#, ": the file ends before the config's object is closed: expected '}' to match the '{' at line 1, column 1"),
        (#"{ maxConcurrentRuns: 2222222222222222222222222222222222222222, actions: { a: { exec: ["x"] } } }"#,
         "maxConcurrentRuns: expected a whole number from 1 to 1000000, got 2.2222222222222223e+39"),
        (#"{ retention: { maxAge: "forever" }, actions: { a: { exec: ["x"] } } }"#, "retention.maxAge: expected a duration"),
        (#"{ actions: { a: { exec: ["x"], retention: { maxRunsPerAction: 0 } } } }"#, "actions.a.retention.maxRunsPerAction: expected a whole number from 1"),
        (#"{ actions: { a: { exec: ["x"], retention: { keep: "1d" } } } }"#, "actions.a.retention.keep: unknown field"),
        (#"{ actions: { dup: { exec: ["x"] }, dup: { exec: ["y"] } } }"#, "actions.dup: written twice in the same object"),
        (#"{ actions: { a: { exec: ["x"], timeout: "1s", "timeout": "2s" } } }"#, "actions.a.timeout: written twice"),
        (#"{ actions: { a: { exec: ["x"], timeout: "1s", "time\u006fut": "2s" } } }"#, "actions.a.timeout: written twice"),
        (#"{ actions: { a: { exec: ["x"], env: { 'K': "1", "\x4B": "2" } } } }"#, "actions.a.env.K: written twice"),
        (#"{ actions: { a: { exec: ["x"], timeout: "0s" } } }"#, "actions.a.timeout: must be more than 0"),
        (#"{ actions: { a: { exec: ["x"], timeout: "106751991d" } } }"#, "actions.a.timeout: \"106751991d\" is too long: at most"),
        (#"{ maxConcurrentRuns: 1e400, actions: { a: { exec: ["x"], timeout: "soon" } } }"#,
         "maxConcurrentRuns: expected a whole number from 1 to 1000000, got a number too large to represent"),
        ("{ actions: { a: { exec: [\"x\"], description: \"" + String(repeating: "d", count: 2_000) + "\" } } }",
         "actions.a.description: is 2000 bytes; at most 1024"),
        ("{ actions: { a: { exec: [\"x\"], params: { " + (0...100).map { "p\($0): {}" }.joined(separator: ", ") + " } } } }",
         "actions.a.params: declares 101 params; at most 100 (as many as a trigger may pass)"),
        (#"{ actions: { a: { exec: ["x\u0000y"] } } }"#,
         "actions.a.exec[0]: a NUL (\\u0000) in the string (line 1, column 30): a config string cannot hold one"),
        ("{ actions: { a: { exec: [\"x\", 'y\u{0}'] } } }",
         "actions.a.exec[1]: a NUL (\\u0000) in the string (line 1, column 33): a config string cannot hold one"),
        (#"{ actions: { a: { exec: ["x"], env: { K: "\x00" } } } }"#, "actions.a.env.K: a NUL (\\u0000) in the string"),
        (#"{ actions: { a: { exec: ["x"], description: "\uD800" } } }"#, "actions.a.description: half of a surrogate pair"),
        (#"{ actions: { a: { exec: ["x"], timeout: "1\u0000s" } } }"#, "actions.a.timeout: expected a duration such as \"30s\", \"5m\" or \"1h30m\", got a string with a NUL"),
        (#"{ actions: { a: { exec: ["x"], params: { x: { pattern: "^safe$" }, X: {} } } } }"#,
         "actions.a.params: X and x are both BATON_PARAM_X in the process's environment: rename one"),
        (#"{ actions: { a: { exec: ["x"], params: { Env: {}, eNv: {}, env: {} } } } }"#,
         "actions.a.params: Env, eNv and env are all BATON_PARAM_ENV in the process's environment: rename all but one"),
    ])
    func errors(text: String, expected: String) {
        let found = problems(text)
        #expect(found.contains { $0.hasPrefix(expected) }, "\(found)")
    }

    @Test("1e400 does not hide the other errors; keys in strings, comments and nested objects are not duplicates")
    func numbersAndDuplicates() {
        let found = problems(#"{ maxConcurrentRuns: 1e400, actions: { a: { exec: ["x"], timeout: "soon" } } }"#)
        #expect(found.contains { $0.hasPrefix("actions.a.timeout: expected a duration") }, "\(found)")
        let clean = problems(#"""
            // timeout: twice in a comment, timeout:
            { actions: { a: { exec: ["timeout:", "timeout:"], /* env: { */ env: { timeout: "1" }, timeout: "1s",
              params: { p: { default: "a, b: c" }, q: { default: 'it\'s' } } } } }
            """#)
        #expect(clean.isEmpty, "\(clean)")
        #expect(DuplicateKeys.find(in: Array(#"{ a: { b: 1, c: [ { b: 1 }, { b: 2, b: 3 } ] }, a: 2 }"#.utf8)) == ["a.c.b", "a"])
    }

    @Test("a config path that is not a regular file is refused saying what it is", arguments: [
        ("directory", "is a directory, not a config file"),
        ("zero", "is not a regular file (it is a character device)"),
        ("fifo", "is not a regular file (it is a FIFO)"),
        ("missing", "cannot read the file: No such file or directory"),
    ])
    func notAFile(kind: String, message: String) throws {
        let directory = NSTemporaryDirectory() + "baton-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/baton.json5"
        switch kind {
        case "directory": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case "zero": try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/zero")
        case "fifo": #expect(mkfifo(path, 0o600) == 0)
        default: break
        }
        do {
            _ = try Config.load(path: path)
            Issue.record("a \(kind) was read as a config")
        } catch {
            #expect(error.description == "\(path): \(message)")
        }
    }

    @Test("a config over 1 MiB is refused before it is parsed")
    func tooLarge() {
        let found = problems("{ actions: { a: { exec: [\"x\"] } } }" + String(repeating: " ", count: 1_048_577))
        #expect(found.first?.contains("a config is at most 1 MiB") == true, "\(found)")
    }

    @Test("a pattern with nested quantifiers is accepted with a warning naming its field; others draw none")
    func nestedQuantifierWarning() throws {
        let config = try Config.parse(Data(#"""
            { requireUser: false, actions: { r: { exec: ["x"], params: { x: { pattern: "^(a+)+$" }, y: { pattern: "^[a-z]+$" } } } } }
            """#.utf8), file: "c")
        #expect(config.warnings.count == 1)
        #expect(config.warnings.first?.hasPrefix("c: actions.r.params.x.pattern: \"^(a+)+$\" repeats a repetition") == true)
        #expect(config.actions.first?.params["x"]?.pattern?.matches("aaa") == true)
    }

    @Test("search: \"scan\" by default, \"index\" asked for, anything else refused naming the choices")
    func searchSetting() throws {
        #expect(try Config.parse(Data(#"{ actions: {} }"#.utf8), file: "c").search == .scan)
        #expect(try Config.parse(Data(#"{ search: "index", actions: {} }"#.utf8), file: "c").search == .index)
        let refused = problems(#"{ search: "fts", actions: {} }"#)
        #expect(refused.count == 1 && refused[0].contains("search") && refused[0].contains("scan, index"), "\(refused)")
        let fleet = try Config.parse(Data(#"{ postgres: "dbname=x", search: "index", actions: {} }"#.utf8), file: "c")
        // A fleet makes PostgreSQL's trigram index with it (FleetSearch.makeIndex): no warning.
        #expect(fleet.search == .index && !fleet.warnings.contains { $0.contains("search") }, "\(fleet.warnings)")
    }

    @Test("retention: global fields over the standard, action fields over the global")
    func retention() throws {
        let config = try Config.parse(Data(#"{ retention: { maxAge: "7d" }, actions: { a: { exec: ["x"], retention: { maxRunsPerAction: 5 } }, b: { exec: ["x"] } } }"#.utf8), file: "c")
        #expect(config.retention == Retention(maxAge: .seconds(7 * 86_400)))
        #expect(config.actions[0].retention == Retention.Override(maxRunsPerAction: 5))
        #expect(config.retention.overridden(by: config.actions[0].retention)
                == Retention(maxAge: .seconds(7 * 86_400), maxRunsPerAction: 5))
        #expect(config.actions[1].retention == nil)
    }

    @Test("invalid UTF-8 is refused with its offset before the JSON5 scanner sees it (found by the config fuzzer)")
    func invalidUTF8() {
        let bytes: [UInt8] = Array("{ a".utf8) + [0xBF, 0xFF, 0xC3] + Array("c: 1 }".utf8)
        do {
            _ = try Config.parse(Data(bytes), file: "c")
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.description == "c: not valid UTF-8 (at byte 3)")
        }
        #expect(Config.firstInvalidUTF8(Data("héllo 日本 🎉".utf8)) == nil)
        #expect(Config.firstInvalidUTF8(Data([0x41, 0xE6, 0x97])) == 1)          // cut short
        #expect(Config.firstInvalidUTF8(Data([0xC0, 0x80])) == 0)               // overlong
        #expect(Config.firstInvalidUTF8(Data([0xED, 0xA0, 0x80])) == 0)         // a surrogate
    }

    @Test("all problems are reported at once, each with the file name")
    func allAtOnce() {
        do {
            _ = try Config.parse(Data(#"{ actions: { a: { exec: ["x"], policy: "no" }, b: { exec: [] } } }"#.utf8), file: "/etc/baton/baton.json5")
            Issue.record("expected errors")
        } catch {
            #expect(error.problems.count == 2)
            #expect(error.description.split(separator: "\n").allSatisfy { $0.hasPrefix("/etc/baton/baton.json5: actions.") })
        }
    }

    @Test("batond's flags parse, and unknown ones are refused")
    func flags() throws {
        let options = try DaemonOptions.parse(["--config", "/c", "--socket=/s", "--database", "/d"])
        #expect(options.config == "/c")
        #expect(options.socket == "/s")
        #expect(options.database == "/d")
        #expect(throws: UsageError("unknown argument --nope")) { try DaemonOptions.parse(["--nope"]) }
        #expect(throws: UsageError("--config needs a value")) { try DaemonOptions.parse(["--config"]) }
    }
}
