import Foundation

/// A real `baton dashboard` on a daemon's socket: its address, its token, and a stop at the end.
final class DashboardProcess: @unchecked Sendable {
    let child: Spawned
    let url: String
    /// `127.0.0.1:PORT`
    let hostPort: String
    let token: String

    /// Starts `baton dashboard` (through `launcher`, such as setpriv, when given) and reads its address.
    init(socket: String, arguments: [String] = [], launcher: [String] = [], environment: [String: String] = [:]) throws {
        child = try Spawned(launcher + [Binaries.baton, "--socket", socket, "dashboard"] + arguments, environment: environment)
        // The address is the banner's second line; read until it is in (or the process ends).
        let text = child.readStdout { $0.contains("?token=") && $0.hasSuffix("\n") }
        guard let line = text.split(separator: "\n").first(where: { $0.contains("?token=") }) else {
            throw DashboardError("baton dashboard printed no address: \(text) \(child.availableStderr())")
        }
        url = line.trimmingCharacters(in: .whitespaces)
        hostPort = String(url.dropFirst("http://".count).prefix { $0 != "/" })
        token = String(url[url.range(of: "?token=")!.upperBound...])
    }

    func stop() { child.stop() }

    var port: UInt16 { UInt16(hostPort.split(separator: ":").last!)! }
    var cookie: String { "baton_dashboard=\(token)" }
}

struct DashboardError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
