import Foundation
import Testing

/// libpq is opened only for a fleet (BatonFleet's `LibPQ`): a batond on one machine maps neither
/// it nor the libraries it brings (libssl, libkrb5, libldap, libgnutls…), a fleet host does; and
/// libcrypto only for webhooks (BatonHooks' `HMAC`).
@Suite("End to end: libpq is mapped by a fleet's batond only", .serialized, .offPool)
struct LibPQMappingTests {
    /// The shared objects batond has mapped, by file name.
    static func mapped(_ daemon: Daemon) throws -> Set<String> {
        // Read to its end: a file of /proc says its size is 0.
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(daemon.process.processIdentifier)/maps"))
        defer { try? file.close() }
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.flatMap { $0.hasPrefix("/") ? $0.split(separator: "/").last.map(String.init) : nil }
        })
    }

    @Test("a one-machine batond without webhooks, ready and having answered, maps no libpq, libssl, libkrb5, libldap or libcrypto")
    func oneMachine() throws {
        let daemon = try Daemon(config: #"{ actions: { hello: { exec: ["true"] } } }"#)
        defer { daemon.stop() }
        #expect(try daemon.baton("status").code == 0)
        let libraries = try Self.mapped(daemon)
        #expect(libraries.contains { $0.hasPrefix("libsqlite3") }, "the maps were read: \(libraries.sorted())")
        let fleetOnly = libraries.filter { ["libpq", "libssl", "libkrb5", "libldap", "libgnutls", "libcrypto"].contains(where: $0.hasPrefix) }
        #expect(fleetOnly.isEmpty, "\(fleetOnly.sorted())")
    }

    @Test("a fleet host maps libpq once it has joined")
    func fleetHost() throws {
        let conninfo = try Postgres.server().database()
        let host = try Daemon(config: #"{ postgres: "\#(conninfo)", host: "web-1", lease: "5s", actions: { quick: { exec: ["true"] } } }"#)
        defer { host.stop() }
        try host.waitForLog("joined the fleet")
        let libraries = try Self.mapped(host)
        #expect(libraries.contains { $0.hasPrefix("libpq.so.5") }, "\(libraries.sorted())")
    }
}
