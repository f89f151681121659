import BatonCore
import BatonDashboard
import BatonIPC
import FoundationEssentials
import Glibc

/// `baton dashboard`: a web page of buttons, one per action, served on this machine.
enum DashboardCommand {
    static let spec = CommandSpec(
        name: "dashboard",
        abstract: """
            Serve a web page of buttons, one per action. Each shows its run loading, its progress and its \
            outcome, with cancel, params and the live history below. The page asks batond as you, so it may \
            do exactly what you may. Prints an address with a one-time sign-in code (good once, for 60 s; \
            Enter prints a new one): open it in a browser on this machine. Ctrl-C stops it.
            """,
        arguments: "",
        options: [
            OptionSpec(long: "listen", short: nil, value: "ADDR:PORT",
                       help: "where to serve (default 127.0.0.1 on a free port); 0.0.0.0 or [::]: every address; not loopback: a warning"),
            OptionSpec(long: "open", short: nil, value: nil,
                       help: "open it in a browser ($BROWSER or xdg-open), through a file only you can read"),
            OptionSpec(long: "trusted-proxy", short: nil, value: "CIDR",
                       help: "serve a team behind this sign-in proxy (repeatable): each request as the user it names; run as batond's user"),
            OptionSpec(long: "user-header", short: nil, value: "NAME",
                       help: "the field the proxy names the user in (default X-Forwarded-User)"),
            OptionSpec(long: "groups-header", short: nil, value: "NAME",
                       help: "the field the proxy lists the user's groups in, comma-separated (default X-Forwarded-Groups), for group:NAME rules of --user-map"),
            OptionSpec(long: "proxy-user", short: nil, value: "USER",
                       help: "the user a proxy on this machine runs as (repeatable; nginx: www-data): a local peer is believed only as it"),
            OptionSpec(long: "user-map", short: nil, value: "FILE",
                       help: "map the proxy's names to accounts or groups: one rule a line, first match wins (alice@example.org alice, *@example.org group:staff); read again on SIGHUP"),
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
        let proxy = try proxyGate(arguments)
        let mapPath = arguments.value("user-map")
        let map = try mapPath.map { path throws(Failure) in try DashboardUserMap.load(path) }
        if mapPath != nil { DashboardUserMap.blockHangUp() }
        // Reach batond once first: a dashboard that cannot is better refused now than blank later.
        // A team's asks as its users: batond must take `as` from this user (root or batond's own).
        _ = try context.ask(proxy == nil ? .version : .version.acting(as: Format.userName(getuid())))
        let server: DashboardServer
        do {
            server = try DashboardServer(listening: address, socketPath: context.socketPath, limits: proxy == nil ? .init() : .team, proxy: proxy,
                                         reactor: Reactor(), onSignIn: tell)
        } catch {
            throw Failure(code: ExitCode.unavailable, message: "cannot serve on \(address): \(Context.reason(error))",
                          hint: "pick another address with --listen ADDR:PORT")
        }
        if let proxy {
            server.use(map)
            if let mapPath { DashboardUserMap.reloadOnHangUp(mapPath, into: server) }
            serveTeam(server, proxy, context)
        }
        if !address.isLoopback {
            say("""
                warning: \(server.address)\(address.isWildcard ? " (every address of this machine)" : "") is not a loopback address: \
                it serves browsers on this machine only (any other peer is refused), and nothing is encrypted (no TLS). \
                Prefer the default; from elsewhere use an SSH tunnel, or serve a team behind a sign-in proxy (--trusted-proxy).\n
                """, to: .error)
        }
        say("Baton dashboard for batond at \(context.socketPath), acting as \(Format.userName(getuid())):\n"
            + "  \(server.address(code: server.issueCode()))\n"
            + "Open it in a browser on this machine: its code signs in one page, within 60 s. "
            + "Enter prints a new address; Ctrl-C stops the dashboard.\n")
        signal(SIGINT) { _ in BrowserFile.removeAndExit() }
        signal(SIGTERM) { _ in BrowserFile.removeAndExit() }
        signal(SIGPIPE, SIG_IGN)
        if arguments.flag("open") { BrowserFile.open(server) }
        SystemThread.start {
            while readLine() != nil { say("  \(server.address(code: server.issueCode()))\n") }
        }
        server.serve()
    }

    /// The team's proxy from `--trusted-proxy` and `--user-header`; nil without a proxy.
    static func proxyGate(_ arguments: ParsedArguments) throws(UsageError) -> ProxyGate? {
        let proxies = arguments.all("trusted-proxy")
        guard !proxies.isEmpty else {
            if arguments.value("user-header") != nil { throw UsageError("--user-header needs --trusted-proxy: the header is believed only from a proxy") }
            if arguments.value("groups-header") != nil { throw UsageError("--groups-header needs --trusted-proxy: the header is believed only from a proxy") }
            if arguments.value("proxy-user") != nil { throw UsageError("--proxy-user needs --trusted-proxy") }
            if arguments.value("user-map") != nil { throw UsageError("--user-map needs --trusted-proxy: it maps the names a proxy gives") }
            return nil
        }
        var ranges: [AddressRange] = []
        for text in proxies {
            guard let range = AddressRange(text) else {
                throw UsageError("--trusted-proxy: expected a numeric address or ADDRESS/BITS (10.0.0.0/8, ::1), got \(text)")
            }
            guard range.prefixLength >= (range.isIPv4 ? 8 : 16) else {
                throw UsageError("--trusted-proxy: \(text) trusts a whole network or the world; name the proxy's own address (10.0.0.5; a block no wider than /8, or /16 for IPv6)")
            }
            ranges.append(range)
        }
        let header = try field(arguments, "user-header", default: "X-Forwarded-User")
        let groups = try field(arguments, "groups-header", default: "X-Forwarded-Groups")
        guard header.lowercased() != groups.lowercased() else { throw UsageError("--groups-header: \(groups) is the user's field too") }
        var users = Set<UInt32>()
        for name in arguments.all("proxy-user") {
            guard let account = UserDatabase.account(name) else { throw UsageError("--proxy-user: no user \(name) on this machine") }
            users.insert(account.uid)
        }
        return ProxyGate(trusted: ranges, userHeader: header, groupsHeader: groups, proxyUsers: users)
    }

    /// Fields of HTTP itself, and those browsers and clients set (or a proxy passes through, as
    /// `X-Forwarded-For` is appended to): none names a user or their groups (`Sec-*` neither).
    static let clientFields: Set<String> = [
        "host", "cookie", "authorization", "proxy-authorization", "origin", "content-type", "content-length", "connection",
        "user-agent", "referer", "accept", "accept-language", "accept-encoding", "cache-control", "pragma", "range", "te",
        "transfer-encoding", "upgrade", "expect", "via", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
        "x-real-ip", "x-requested-with", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "dnt",
    ]

    /// A field the proxy names the user (or their groups) in: `--OPTION`, or its default.
    static func field(_ arguments: ParsedArguments, _ option: String, default name: String) throws(UsageError) -> String {
        let header = arguments.value(option) ?? name
        guard !header.isEmpty, header.utf8.count <= 64, header.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw UsageError("--\(option): expected a field name (letters, digits, -), got \(header)")
        }
        guard !clientFields.contains(header.lowercased()), !header.lowercased().hasPrefix("sec-") else {
            throw UsageError("--\(option): \(header) is a field of HTTP itself or one clients set, not one a proxy names a user in")
        }
        return header
    }

    /// Serves a team behind its proxy: no one-time codes; each request asks batond as its user.
    static func serveTeam(_ server: DashboardServer, _ proxy: ProxyGate, _ context: Context) -> Never {
        say("Baton dashboard for batond at \(context.socketPath), serving the users its proxy names:\n"
            + "  listening on \(server.address), believing \(proxy.userHeader) from \(proxy.trusted.map(\.description).joined(separator: ", ")) only\n"
            + "Each request asks batond as its user (only root and batond's own user may: run this as batond's user).\n")
        signal(SIGPIPE, SIG_IGN)
        server.serve()
    }

    /// Says on the dashboard's terminal when a page signs in, and when a code comes twice.
    @Sendable static func tell(_ event: DashboardServer.SignIn) {
        switch event {
        case let .signedIn(code):
            BrowserFile.used(code)
            say("a page signed in (code …\(code.suffix(6)))\n")
        case let .reused(code):
            say("""
                warning: the code …\(code.suffix(6)) came a second time, so the page it signed in is signed out. If you \
                did not open it twice, someone else read it: press Enter for a new address.\n
                """, to: .error)
        }
    }

    static func say(_ text: String, to handle: Stdio = .output) {
        handle.write(Data(text.utf8))
    }
}
