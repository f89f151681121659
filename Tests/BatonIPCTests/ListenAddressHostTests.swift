import BatonIPC
import Testing

/// `ListenAddress.sameHost`: what a restart in place compares to keep its own webhook socket
/// (`Daemon.ownWebhooks`): the config's text against the address the kernel reports.
@Suite("ListenAddress: hosts compared as addresses")
struct ListenAddressHostTests {
    @Test("spellings of one address are the same host; other addresses and families are not")
    func sameHost() {
        func address(_ host: String) -> ListenAddress { ListenAddress(host: host, port: 0) }
        #expect(address("0:0::1").sameHost(as: address("::1")))
        #expect(address("::0001").sameHost(as: address("::1")))
        #expect(address("::FFFF:7F00:1").sameHost(as: address("::ffff:127.0.0.1")))
        #expect(address("127.0.0.1").sameHost(as: address("127.0.0.1")))
        #expect(!address("127.0.0.1").sameHost(as: address("127.0.0.2")))
        #expect(!address("127.0.0.1").sameHost(as: address("::ffff:127.0.0.1")), "another family: another socket")
        #expect(!address("::").sameHost(as: address("0.0.0.0")))
    }
}
