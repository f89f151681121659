import Foundation

/// A real `baton dashboard` on a daemon's socket: its address, its token, and a stop at the end.
final class DashboardProcess: @unchecked Sendable {
    let process = Process()
    let url: String
    /// `127.0.0.1:PORT`
    let hostPort: String
    let token: String
    let stderr: Pipe

    /// Starts `baton dashboard` (through `launcher`, such as setpriv, when given) and reads its address.
    init(socket: String, arguments: [String] = [], launcher: [String] = [], environment: [String: String] = [:]) throws {
        let argv = launcher + [Binaries.baton, "--socket", socket, "dashboard"] + arguments
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        stderr = Pipe()
        process.standardOutput = out
        process.standardError = stderr
        try process.run()
        // The address is the banner's second line; read lines until it comes (or the process ends).
        var text = ""
        let fd = out.fileHandleForReading.fileDescriptor
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !text.contains("?token=") || !text.hasSuffix("\n") {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first(where: { $0.contains("?token=") }) else {
            let error = String(decoding: stderr.fileHandleForReading.availableData, as: UTF8.self)
            throw DashboardError("baton dashboard printed no address: \(text) \(error)")
        }
        url = line.trimmingCharacters(in: .whitespaces)
        hostPort = String(url.dropFirst("http://".count).prefix { $0 != "/" })
        token = String(url[url.range(of: "?token=")!.upperBound...])
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    var port: UInt16 { UInt16(hostPort.split(separator: ":").last!)! }
    var cookie: String { "baton_dashboard=\(token)" }
}

struct DashboardError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
