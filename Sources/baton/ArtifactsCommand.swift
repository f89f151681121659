import BatonCore
import BatonStore
import FoundationEssentials
import Glibc

/// `baton artifacts RUN [NAME] [-o FILE]`: the files a run kept; one of them, written out.
enum ArtifactsCommand {
    static let spec = CommandSpec(
        name: "artifacts",
        abstract: """
            List the files a run kept, or write one out. A run's artifacts are what its action wrote to $BATON_ARTIFACTS \
            (with artifacts: { keep } in the config), listed with their size and SHA-256. With NAME, write that file to \
            stdout (a binary one only to a pipe or with -o), or to FILE with -o, checked against its SHA-256. Under the \
            run's access rules, as its output. Works when batond is down.
            """,
        arguments: "RUN [NAME]",
        options: [
            OptionSpec(long: "output", short: "o", value: "FILE", help: "write the file NAME to FILE instead of stdout"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the list as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard (1...2).contains(arguments.positionals.count), let run = Int64(arguments.positionals[0]) else {
            throw UsageError("baton artifacts needs a RUN id (a number), and optionally a file's NAME")
        }
        if arguments.positionals.count == 2 {
            return try write(run, name: arguments.positionals[1], to: arguments.value("output"), context)
        }
        if arguments.value("output") != nil { throw UsageError("baton artifacts: -o needs a file's NAME to write") }
        guard let list = try Query.artifacts(run, context) else {
            throw Failure(code: ExitCode.usage, message: "no run \(run)", hint: "baton history")
        }
        print(arguments.flag("json") ? Format.json(list) : listing(list), terminator: arguments.flag("json") ? "\n" : "")
        return ExitCode.success
    }

    /// The table `baton artifacts RUN` prints, and `baton show` after the run's story.
    static func listing(_ list: ArtifactList) -> String {
        var text = ""
        if list.files.isEmpty {
            text += "run \(list.run) kept no artifacts\n"
        } else {
            let rows = list.files.map { [Terminal.visible($0.name), Format.bytes($0.size), $0.sha256] }
            text += Format.table(["NAME", "SIZE", "SHA256"], rows, width: nil)
            if !text.hasSuffix("\n") { text += "\n" }
        }
        for notice in list.notices { text += "note: \(Terminal.visible(notice))\n" }
        return text
    }

    /// Writes one artifact, a piece at a time, to FILE or stdout; checks its SHA-256 at the end.
    /// FILE is written as a new 0600 file beside it, renamed over it once whole and checked (a
    /// link there is replaced, never followed); removed on any failure.
    static func write(_ run: Int64, name: String, to path: String?, _ context: Context) throws -> Int32 {
        guard let first = try Query.artifact(run, name, from: 0, context) else {
            throw Failure(code: ExitCode.usage, message: "run \(run) kept no artifact named \(Terminal.visible(name))", hint: "baton artifacts \(run)")
        }
        if path == nil, isatty(1) == 1, !isText(first) {
            throw Failure(code: ExitCode.usage, message: "\(Terminal.visible(name)) is binary (\(first.artifact.type)): not written to a terminal",
                          hint: "baton artifacts \(run) \(name) -o FILE, or pipe it")
        }
        guard let path else {
            try copy(run, name: name, first, to: 1, named: nil, context)
            return ExitCode.success
        }
        let temporary = try ArtifactOutput(beside: path)
        do {
            try copy(run, name: name, first, to: temporary.fd, named: path, context)
        } catch {
            temporary.discard()
            throw error
        }
        try temporary.replace(path)
        return ExitCode.success
    }

    /// `first` and the pieces after it to `fd`, each of the same file; its SHA-256 checked at the end.
    private static func copy(_ run: Int64, name: String, _ first: ArtifactPiece, to fd: Int32, named path: String?, _ context: Context) throws {
        let digest = try? SHA256()
        var piece = first
        while true {
            digest?.update(piece.bytes)
            try writeAll(fd, piece.bytes, to: path)
            guard let next = piece.next, next > piece.from else { break }
            guard let more = try Query.artifact(run, name, from: next, context) else {
                throw Failure(code: ExitCode.unavailable, message: "\(Terminal.visible(name)) of run \(run) is gone (pruned meanwhile?)")
            }
            guard more.follows(piece, at: next) else {
                throw Failure(code: ExitCode.unavailable, message: "\(Terminal.visible(name)) of run \(run) changed while read (another attempt's files were kept)",
                              hint: "read it again")
            }
            piece = more
        }
        if let digest, digest.finish() != first.artifact.sha256 {
            throw Failure(code: ExitCode.software, message: "\(Terminal.visible(name)): what was written does not match its SHA-256 \(first.artifact.sha256)")
        }
    }

    /// Every byte to `fd`, or a failure naming where (a full disk, a closed pipe).
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], to path: String?) throws {
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(code: ExitCode.software, message: "cannot write \(path ?? "stdout"): \(String(cString: strerror(errno)))") }
            done += count
        }
    }

    /// Whether a file may go to a terminal: a text type, and no NUL in its first piece.
    static func isText(_ piece: ArtifactPiece) -> Bool {
        let type = piece.artifact.type
        let textual = type.hasPrefix("text/") || ["application/json", "application/x-ndjson", "application/xml", "application/yaml",
                                                  "application/toml", "application/sql"].contains(type)
        return textual && !piece.bytes.contains(0)
    }
}

/// `-o FILE`'s file while it is written: new (O_EXCL, never through a link), 0600, beside FILE.
struct ArtifactOutput {
    let path: String
    let fd: Int32

    init(beside destination: String) throws {
        let directory = destination.parentPath
        let prefix = (directory.isEmpty ? "" : directory + "/") + "." + destination.baseName + ".baton-"
        var made: (String, Int32)?
        for _ in 0..<8 where made == nil {
            let path = prefix + String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { made = (path, fd) } else if errno != EEXIST { break }
        }
        guard let (path, fd) = made else {
            throw Failure(code: ExitCode.usage, message: "cannot write \(destination): \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.fd = fd
    }

    /// Flushed, closed and renamed over `destination` (a link there is replaced, not followed).
    func replace(_ destination: String) throws {
        let synced = fsync(fd) == 0
        let closed = close(fd) == 0
        guard synced, closed, rename(path, destination) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(path)
            throw Failure(code: ExitCode.software, message: "cannot write \(destination): \(why)")
        }
    }

    /// Closed (where still open) and removed.
    func discard() {
        close(fd)
        unlink(path)
    }
}
