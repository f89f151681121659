import BatonCore
import BatonIPC
import Testing

@Suite("Socket paths")
struct SocketPathTests {
    @Test("a client uses its own daemon's socket if there is one, else the system daemon's, else names its own")
    func client() {
        let environment = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        let own = SocketPath.default(environment: environment)
        #expect(SocketPath.forClient(environment: environment, exists: { $0 == own }) == own)
        #expect(SocketPath.forClient(environment: environment, exists: { $0 == SocketPath.system || $0 == own }) == own)
        #expect(SocketPath.forClient(environment: environment, exists: { $0 == SocketPath.system }) == SocketPath.system)
        #expect(SocketPath.forClient(environment: environment, exists: { _ in false }) == own)
    }

    @Test("a client given no path takes $BATON_SOCKET when it is set and not empty, else searches as forClient")
    func search() {
        let environment = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        let own = SocketPath.default(environment: environment)
        #expect(SocketPath.search(environment: environment.merging(["BATON_SOCKET": "/tmp/b.sock"]) { $1 }, exists: { _ in true }) == "/tmp/b.sock")
        #expect(SocketPath.search(environment: environment.merging(["BATON_SOCKET": ""]) { $1 }, exists: { $0 == SocketPath.system }) == SocketPath.system)
        #expect(SocketPath.search(environment: environment, exists: { _ in false }) == own)
    }
}
