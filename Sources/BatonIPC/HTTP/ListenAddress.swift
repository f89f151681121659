/// Where an HTTP listener binds: a numeric IPv4 or IPv6 address and a port, written
/// `127.0.0.1:9469` or `[::1]:9469` (`localhost` means 127.0.0.1). Port 0 takes a free one.
public struct ListenAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// The address, or why the text is not one.
    public static func parse(_ text: String) -> Result<ListenAddress, ListenAddressError> {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return .failure(ListenAddressError(text: text))
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return .failure(ListenAddressError(text: text)) }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard let number = UInt16(port), !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" || $0.isLetter }) else {
            return .failure(ListenAddressError(text: text))
        }
        let name = host == "localhost" ? "127.0.0.1" : String(host)
        guard name.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }) else { return .failure(ListenAddressError(text: text)) }
        return .success(ListenAddress(host: name, port: number))
    }

    /// Whether only this machine can connect (127.0.0.0/8 or ::1).
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct ListenAddressError: Error, Equatable, Sendable, CustomStringConvertible {
    public var text: String
    public var description: String {
        "expected ADDRESS:PORT with a numeric address, such as \"127.0.0.1:9469\" or \"[::1]:9469\", got \"\(text)\""
    }
}
