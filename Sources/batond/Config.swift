import BatonCore
import BatonIPC
import BatonStore
import FoundationEssentials
import Glibc

/// batond's configuration: where it listens and writes, its limits, and the actions it runs.
struct Config: Sendable, Equatable {
    var socket: String?
    var socketMode: mode_t = 0o660
    var socketGroup: String?
    var database: String?
    var maxConcurrentRuns: Int = Conductor.processorCount
    var shutdownGrace: Duration = .seconds(30)
    /// Connections open at once, from everyone.
    var maxConnections = 20_000
    /// Whether the config named `maxConnections` (then a lower open-file limit is worth a warning).
    var maxConnectionsGiven = false
    /// Connections one uid (other than root and batond's own) may hold open.
    var maxConnectionsPerUser = 256
    /// How long a request line may take to arrive once begun.
    var requestTimeout: Duration = .seconds(10)
    var synchronous: Store.Synchronous = .full
    /// How `baton search` finds a text in the kept output (`search`): by scanning it, or through
    /// a trigram index the writer keeps in step at a cost to every commit.
    var search: SearchSetting = .scan
    /// Where `GET /metrics` is served over HTTP (`metrics: { listen: "127.0.0.1:9469" }`); nil: not at all.
    var metricsListen: ListenAddress?
    /// The webhook listener and its hooks (issue 27); nil: none.
    var webhooks: WebhookConfig?
    /// How a run's processes are kept track of (`processTree`).
    var processTree: ProcessTreeSetting = .auto
    /// Whether each line of output also goes to the journal, where journald listens (`output.journal`).
    var journal = true
    /// `postgres`, `host` and `lease`: this batond is one host of a fleet sharing that database.
    var fleet: FleetConfig?
    /// The key secret params' values are hashed under (`secretsKey`): nil on one machine, which
    /// makes its own beside the database (`SecretParamKey`); a fleet's hosts share one file.
    var secretsKey: String?
    /// How long ended runs are kept; actions may override each field.
    var retention: Retention = .standard
    /// Who may trigger, cancel and read (root and batond's own user always may); actions may override.
    var access = AccessPolicy()
    /// Whether trigger and cancel default to the socket file's group (no socketGroup, no explicit rule).
    var triggerFollowsSocket = false

    /// The access rules in force: by default the group that owns the socket file (as batond.socket
    /// sets it) may trigger and cancel, unless that group is root's.
    func access(socketGroup gid: UInt32?) -> AccessPolicy {
        guard triggerFollowsSocket, let gid, gid != 0 else { return access }
        var rules = access
        rules.trigger = AccessRule(groups: [gid])
        rules.cancel = AccessRule(groups: [gid])
        return rules
    }
    var actions: [Action] = []
    /// Legal but likely unintended settings, one line each naming the file and field.
    var warnings: [String] = []

    /// The largest config file read: every answer that echoes it (`actions`, `status`) then fits a frame.
    static let maxSize = 1_048_576

    /// Reads and checks a config file (a regular file: see `contents(of:)`); every problem found is
    /// reported, each with its field.
    static func load(path: String) throws(ConfigError) -> Config {
        try parse(try contents(of: path), file: path)
    }

    /// Parses and checks config text; `file` names it in errors.
    static func parse(_ data: Data, file: String, reader: ConfigReader = ConfigReader()) throws(ConfigError) -> Config {
        // Foundation's JSON5 scanner traps on invalid UTF-8 in an unquoted key (found by the config
        // fuzzer), so the bytes are checked first.
        if let offset = Self.firstInvalidUTF8(data) {
            throw ConfigError(file: file, problems: [.init(path: "", message: "not valid UTF-8 (at byte \(offset))")])
        }
        guard data.count <= Self.maxSize else {
            throw ConfigError(file: file, problems: [.init(path: "", message: "the file is \(data.count) bytes; a config is at most \(Self.maxSize / 1_048_576) MiB")])
        }
        let bytes = [UInt8](data)
        // Foundation's reader traps on a number such as `1e-` (found by fuzzing): refused first.
        if let trap = ConfigSyntax.trap(in: bytes) {
            throw ConfigError(file: file, problems: [.init(path: "", message: trap.message, place: trap.offset.map { ConfigError.Place(bytes, offset: $0) })])
        }
        let duplicates = DuplicateKeys.find(in: bytes)
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root: JSONValue
        do {
            root = try decoder.decode(JSONValue.self, from: data)
        } catch {
            throw ConfigError(file: file, problems: [syntaxProblem(bytes, error)])
        }
        var reader = reader
        for path in duplicates { reader.fail(path, "written twice in the same object: keep one") }
        let config = reader.config(root)
        guard reader.problems.isEmpty, var config else { throw ConfigError(file: file, problems: reader.problems) }
        config.warnings = reader.warnings.map { "\(file): \($0.path): \($0.message)" }
        return config
    }

    /// The offset of the first byte that is not part of valid UTF-8, or nil when all are.
    static func firstInvalidUTF8(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        var index = 0
        while index < bytes.count {
            let length = switch bytes[index] {
            case 0x00...0x7F: 1
            case 0xC2...0xDF: 2
            case 0xE0...0xEF: 3
            case 0xF0...0xF4: 4
            default: 0
            }
            guard length > 0, index + length <= bytes.count else { return index }
            if length > 1, String(validating: bytes[index..<index + length], as: UTF8.self) == nil { return index }
            index += length
        }
        return nil
    }

    /// Where and why text the JSON5 reader refused goes wrong (`ConfigSyntax`); the reader's own
    /// words where that finds nothing wrong.
    static func syntaxProblem(_ bytes: [UInt8], _ error: any Error) -> ConfigError.Problem {
        guard let found = ConfigSyntax.firstProblem(in: bytes) else {
            return .init(path: "", message: "not valid JSON5: \(Self.describe(error))")
        }
        return .init(path: "", message: found.message, place: found.offset.map { ConfigError.Place(bytes, offset: $0) })
    }

    private static func describe(_ error: any Error) -> String {
        // The parser says where in `NSDebugDescription` (NSDebugDescriptionErrorKey, not in Essentials).
        if case let DecodingError.dataCorrupted(context) = error {
            if let underlying = context.underlyingError as? CocoaError {
                return underlying.userInfo["NSDebugDescription"] as? String ?? "\(underlying)"
            }
            return context.debugDescription
        }
        return "\(error)"
    }
}

/// Everything wrong with a config file.
struct ConfigError: Error, CustomStringConvertible, Equatable {
    struct Problem: Equatable, Sendable {
        /// The field, as `actions.hello.policy`; empty for the whole file.
        var path: String
        var message: String
        /// Where in the file, for a syntax error: shown as compilers show theirs.
        var place: Place? = nil
    }

    var file: String
    var problems: [Problem]

    /// One line per problem, `FILE: FIELD: message`; a syntax error as `FILE:LINE:COLUMN: message`,
    /// then the line and a caret under the column.
    var description: String {
        problems.map { problem in
            guard let place = problem.place else { return line(problem) }
            return "\(line(problem))\n\(place.text)\n\(place.indent)^"
        }.joined(separator: "\n")
    }

    /// One line per problem, a syntax error without its line and caret: what a reload's answer
    /// carries (`baton reload` shows a message on one line per problem).
    var summary: String { problems.map(line).joined(separator: "\n") }

    private func line(_ problem: Problem) -> String {
        if let place = problem.place { return "\(file):\(place.line):\(place.column): \(problem.message)" }
        return "\(file): \(problem.path.isEmpty ? "" : "\(problem.path): ")\(problem.message)"
    }
}

/// `search`: whether the SQLite history keeps the trigram index (`SearchIndex`) for `baton search`;
/// on a fleet, whether this host makes PostgreSQL's (`FleetStore.makeSearchIndex`) at start.
enum SearchSetting: String, Sendable, CaseIterable {
    /// No index: a search reads the kept output, newest first (the default: writes cost nothing more).
    case scan
    /// The index, made at start if missing: fast lookups of 3+ characters, slower output writes.
    case index
}
