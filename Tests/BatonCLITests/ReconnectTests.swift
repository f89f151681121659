@testable import baton
import Testing

@Suite("Reconnect: how long a command waits for batond to come back")
struct ReconnectTests {
    @Test("again() pauses and says yes within the bound, counted from the first loss; reached() starts it over; past it, no")
    func bound() {
        let clock = ContinuousClock()
        var reconnect = Reconnect(bound: .milliseconds(300))
        let start = clock.now
        var tries = 0
        while reconnect.again() { tries += 1 }
        let took = clock.now - start
        // 50, 100, 200 ms pauses: the third try is past the bound.
        #expect(tries >= 2 && tries <= 4, "\(tries)")
        #expect(took >= .milliseconds(300) && took < .seconds(3), "\(took)")
        let past = reconnect.again()
        #expect(!past, "the bound is counted from the first loss, not from each")
        reconnect.reached()
        let afresh = reconnect.again()
        #expect(afresh, "reached starts the bound over")
    }

    @Test("the message names the socket and the bound")
    func message() {
        let said = Reconnect.gone(socket: "/run/baton.sock", "cannot reach batond at /run/baton.sock: No such file or directory")
        #expect(said == "batond did not come back within 30s at /run/baton.sock: cannot reach batond at /run/baton.sock: No such file or directory")
    }
}
