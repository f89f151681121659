import Foundation

/// A network namespace joined to this one by a veth pair: 10.231.N.1 on our side, 10.231.N.2
/// inside. Its link can be taken down and up (a partition); deleted at the end.
final class NetworkNamespace {
    let name: String
    let outside: String
    let hostAddress: String
    let insideAddress: String

    init() throws {
        let n = Int.random(in: 1...250)
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        name = "baton-\(tag)"
        outside = "vb\(tag)a"
        hostAddress = "10.231.\(n).1"
        insideAddress = "10.231.\(n).2"
        let inside = "vb\(tag)b"
        try Self.ip(["netns", "add", name])
        try Self.ip(["link", "add", outside, "type", "veth", "peer", "name", inside])
        try Self.ip(["link", "set", inside, "netns", name])
        try Self.ip(["addr", "add", hostAddress + "/30", "dev", outside])
        try Self.ip(["link", "set", outside, "up"])
        try Self.ip(["-n", name, "addr", "add", insideAddress + "/30", "dev", inside])
        try Self.ip(["-n", name, "link", "set", inside, "up"])
        try Self.ip(["-n", name, "link", "set", "lo", "up"])
    }

    /// The command that runs a program inside.
    var launcher: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    /// Cuts the link (packets are dropped, connections hang) or restores it.
    func link(up: Bool) throws { try Self.ip(["link", "set", outside, up ? "up" : "down"]) }

    static func ip(_ arguments: [String]) throws {
        let result = try execute("/usr/sbin/ip", arguments)
        guard result.code == 0 else { throw NamespaceError.failed("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    deinit {
        _ = try? execute("/usr/sbin/ip", ["link", "del", outside])
        _ = try? execute("/usr/sbin/ip", ["netns", "del", name])
    }

    enum NamespaceError: Error { case failed(String) }
}
