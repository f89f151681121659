import BatonCore
import BatonDashboard
import BatonIPC
import Foundation

/// `baton dashboard`: a web page of buttons, one per action, served on this machine.
enum DashboardCommand {
    static let spec = CommandSpec(
        name: "dashboard",
        abstract: """
            Serve a web page of buttons, one per action. Each shows its run loading, its progress and its \
            outcome, with cancel, params and the live history below. The page asks batond as you, so it may \
            do exactly what you may. Prints an address with a secret token: open it in a browser on this \
            machine. Ctrl-C stops it.
            """,
        arguments: "",
        options: [
            OptionSpec(long: "listen", short: nil, value: "ADDR:PORT",
                       help: "where to serve (default 127.0.0.1 on a free port); not loopback: a warning"),
            OptionSpec(long: "open", short: nil, value: nil, help: "open the address in a browser ($BROWSER or xdg-open)"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw UsageError("baton dashboard takes no arguments") }
        var address = ListenAddress(host: "127.0.0.1", port: 0)
        if let text = arguments.value("listen") {
            switch ListenAddress.parse(text) {
            case let .success(parsed): address = parsed
            case let .failure(error): throw UsageError("--listen: \(error)")
            }
        }
        // Reach batond once first: a dashboard that cannot is better refused now than blank later.
        _ = try context.call(Request(op: .ping))
        let server: DashboardServer
        do {
            server = try DashboardServer(listening: address, token: token(), socketPath: context.socketPath)
        } catch {
            throw Failure(code: ExitCode.unavailable, message: "cannot serve on \(address): \(Context.reason(error))",
                          hint: "pick another address with --listen ADDR:PORT")
        }
        if !address.isLoopback {
            FileHandle.standardError.write(Data("""
                warning: \(server.address) is not a loopback address: anyone who can reach it and learns the token can do \
                what you may do with batond, and nothing is encrypted (no TLS). Prefer the default, or an SSH tunnel.\n
                """.utf8))
        }
        let banner = "Baton dashboard for batond at \(context.socketPath), acting as \(Format.userName(getuid())):\n"
            + "  \(server.url)\nOpen it in a browser on this machine; Ctrl-C stops the dashboard.\n"
        FileHandle.standardOutput.write(Data(banner.utf8))
        signal(SIGINT) { _ in _exit(0) }
        signal(SIGTERM) { _ in _exit(0) }
        signal(SIGPIPE, SIG_IGN)
        if arguments.flag("open") { openBrowser(server.url) }
        server.serve()
    }

    /// 32 random bytes as hex, from the kernel's generator.
    static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = generator.next() as UInt64
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Starts `$BROWSER URL` or `xdg-open URL` without waiting; says so when there is neither.
    static func openBrowser(_ url: String) {
        let environment = ProcessInfo.processInfo.environment
        let candidates = [environment["BROWSER"], "xdg-open"].compactMap { $0 }.filter { !$0.isEmpty }
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for name in candidates {
            let found = name.contains("/") ? name : path.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
            guard let found, access(found, X_OK) == 0 else { continue }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: found)
            process.arguments = [url]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            if (try? process.run()) != nil { return }
        }
        FileHandle.standardError.write(Data("no browser to open here (set $BROWSER, or install xdg-utils); open the address above yourself\n".utf8))
    }
}
