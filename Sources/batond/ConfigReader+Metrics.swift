import BatonIPC

extension ConfigReader {
    /// `metrics: { listen: "127.0.0.1:9469" }`: where Prometheus scrapes; a warning when the
    /// address is not loopback (the counts name every action).
    mutating func metrics(_ value: JSONValue, at path: String) -> ListenAddress? {
        guard let fields = object(value, at: path, allowed: ["listen"]) else { return nil }
        guard let listen = fields["listen"] else {
            fail(path + ".listen", "missing: the address to serve GET /metrics on, such as \"127.0.0.1:9469\"")
            return nil
        }
        guard let text = string(listen, at: path + ".listen") else { return nil }
        switch ListenAddress.parse(text) {
        case let .success(address):
            if !address.isLoopback {
                warn(path + ".listen", "\(address) is not a loopback address: anyone who can reach it reads every action's name and counts")
            }
            return address
        case let .failure(error):
            fail(path + ".listen", error.description)
            return nil
        }
    }
}
