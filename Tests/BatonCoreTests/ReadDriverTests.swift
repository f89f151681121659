import BatonCore
import Testing

/// Issue 38: the service's asynchronous requests are driven from one place and answered on the loop.
@Suite("ReadDriver: async work driven from one task, answered on the loop", .timeLimit(.minutes(1)))
struct ReadDriverTests {
    @Test("a read's result, or its error, comes back on the loop")
    func answeredOnLoop() async {
        let reactor = Reactor()
        let driver = ReadDriver(reactor: reactor)
        let (results, sink) = AsyncStream.makeStream(of: (value: Int?, onLoop: Bool).self)
        driver.read({ () async throws(BatonError) -> Int in 7 }) { sink.yield(((try? $0.get()), reactor.isCurrent)) }
        driver.read({ () async throws(BatonError) -> Int in throw .unknownRun(3) }) { sink.yield(((try? $0.get()), reactor.isCurrent)) }
        var seen: [(value: Int?, onLoop: Bool)] = []
        for await result in results {
            seen.append(result)
            if seen.count == 2 { break }
        }
        #expect(seen.map { $0.value ?? -1 }.sorted() == [-1, 7])
        #expect(seen.allSatisfy { $0.onLoop })
    }

    @Test("reads run side by side (a slow one holds up no other), counted while in flight")
    func sideBySide() async {
        let driver = ReadDriver(reactor: Reactor())
        let (entered, arrived) = AsyncStream.makeStream(of: Void.self)
        let gate = Gate()
        for _ in 0..<2 {
            driver.read({ () async throws(BatonError) -> Int in
                arrived.yield()
                await gate.wait()
                return 1
            }) { _ in }
        }
        var count = 0
        for await _ in entered {
            count += 1
            if count == 2 { break }
        }
        #expect(driver.inFlight == 2)
        gate.open()
    }
}
