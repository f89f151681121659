@testable import batond
import Glibc
import Testing

@Suite("Socket activation: which passed socket is which")
struct SocketActivationTests {
    static let pid: Int32 = 4242
    /// fd 3 a Unix socket, fd 4 and 5 TCP ones.
    static func family(_ fd: Int32) -> Int32? { fd == 3 ? AF_UNIX : AF_INET }

    @Test("by name (a restart in place's own names too), by family where unnamed, and nothing for another process", arguments: [
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1"], SocketActivation.Passed(control: 3)),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "batond.socket:webhooks"], SocketActivation.Passed(control: 3, webhooks: 4)),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2"], SocketActivation.Passed(control: 3, webhooks: 4)),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "webhooks:batond.socket"], SocketActivation.Passed(control: 4, webhooks: 3)),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "batond-control:batond-webhooks"],
         SocketActivation.Passed(control: 3, ownsControl: true, ownWebhooks: 4)),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "control:webhooks"], SocketActivation.Passed(control: 3, webhooks: 4)),
        (["LISTEN_PID": "4243", "LISTEN_FDS": "2"], SocketActivation.Passed()),
        (["LISTEN_FDS": "1"], SocketActivation.Passed()),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "0"], SocketActivation.Passed()),
    ] as [([String: String], SocketActivation.Passed)])
    func sockets(_ environment: [String: String], _ expected: SocketActivation.Passed) {
        #expect(SocketActivation.sockets(environment: environment, pid: Self.pid, family: Self.family) == expected)
    }
}
