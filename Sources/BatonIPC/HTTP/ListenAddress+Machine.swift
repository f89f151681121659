import Glibc

extension ListenAddress {
    /// Whether this is its family's wildcard address (`0.0.0.0`, `::`): a listener on it is reached
    /// at every address of the machine.
    public var isWildcard: Bool {
        var bytes = [UInt8](repeating: 0xFF, count: 16)
        guard inet_pton(host.contains(":") ? AF_INET6 : AF_INET, host, &bytes) == 1 else { return false }
        return bytes.prefix(host.contains(":") ? 16 : 4).allSatisfy { $0 == 0 }
    }

    /// The host's bytes (`inet_pton`: 4 for IPv4, 16 for IPv6), or nil when it is not numeric.
    public var hostBytes: [UInt8]? {
        let v6 = host.contains(":")
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(v6 ? AF_INET6 : AF_INET, host, &bytes) == 1 else { return nil }
        return Array(bytes.prefix(v6 ? 16 : 4))
    }

    /// Whether both name one address (`::1` and `0:0::1`, `::ffff:127.0.0.1` and its other spellings):
    /// compared as parsed, not as text; a host that is not numeric is compared as text.
    public func sameHost(as other: ListenAddress) -> Bool {
        guard let mine = hostBytes, let theirs = other.hostBytes else { return host == other.host }
        return mine == theirs
    }

    /// The machine's own addresses in this address's family, numeric, in the order the kernel lists
    /// its interfaces, loopback included. IPv6 link-local addresses are left out: no URL names one
    /// without its interface, which browsers do not take.
    public func machineAddresses() -> [String] {
        let family = host.contains(":") ? AF_INET6 : AF_INET
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [String] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, Int32(address.pointee.sa_family) == family,
                  let name = Self.numeric(address, family: family), !name.lowercased().hasPrefix("fe80:"), !addresses.contains(name) else { continue }
            addresses.append(name)
        }
        return addresses
    }

    private static func numeric(_ address: UnsafeMutablePointer<sockaddr>, family: Int32) -> String? {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let length = socklen_t(family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        guard getnameinfo(address, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(cString: text)
    }
}
