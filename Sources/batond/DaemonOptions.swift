/// batond's command line.
struct DaemonOptions: Equatable {
    var config: String?
    var socket: String?
    var database: String?
    var checkConfig: String?
    var help = false
    var version = false

    static let usage = """
        Usage: batond [--config FILE] [--socket PATH] [--database PATH]
               batond --check-config FILE

        Runs named actions one at a time per key, and records every run in SQLite.

        Options:
          --config FILE        the config (default: $BATON_CONFIG, /etc/baton/baton.json5,
                               or ./examples/baton.json5)
          --socket PATH        the Unix socket to listen on (overrides the config)
          --database PATH      the history database (overrides the config)
          --check-config FILE  check a config and exit: 0 when it is valid, 1 with its errors
          --version            print the version
          -h, --help           show this help

        Signals: SIGTERM or SIGINT shut down gracefully, SIGHUP reloads the config.
        """

    /// Parses arguments (without the program name); throws a message naming the bad one.
    static func parse(_ arguments: [String]) throws(UsageError) -> DaemonOptions {
        var options = DaemonOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            func value() throws(UsageError) -> String {
                if let inline { return inline }
                guard let next = rest.popFirst() else { throw UsageError("\(name) needs a value") }
                return next
            }
            switch name {
            case "--config", "-c": options.config = try value()
            case "--socket": options.socket = try value()
            case "--database": options.database = try value()
            case "--check-config": options.checkConfig = try value()
            case "--help", "-h": options.help = true
            case "--version": options.version = true
            default: throw UsageError("unknown argument \(argument)")
            }
        }
        return options
    }
}

/// A command line that cannot be understood.
struct UsageError: Error, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
