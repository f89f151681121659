import Foundation
import Testing

/// examples/swift-client: a package outside the repository's own, depending on `BatonClient` by
/// path, built offline and run against a real batond.
@Suite("End to end: the Swift client example", .serialized, .offPool)
struct ClientExampleTests {
    static let example = Container.repository + "/examples/swift-client"

    @Test("examples/swift-client builds offline (a path dependency, nothing fetched) and prints hello's phases as they come")
    func pressesHello() async throws {
        // Its own build directory: SwiftPM locks the repository's while the tests run.
        let build = try await run("/usr/bin/env", ["swift", "build", "--package-path", Self.example, "--disable-automatic-resolution"], within: buildLimit)
        #expect(build.code == 0, "\(build.stdout.suffix(3_000)) \(build.stderr.suffix(3_000))")
        #expect(!(build.stdout + build.stderr).contains("Fetching"), "the example fetched something: \(build.stdout)")
        let resolved = try? String(contentsOfFile: Self.example + "/Package.resolved", encoding: .utf8)
        #expect(resolved == nil || !resolved!.contains("\"location\" : \"http"), "the example pins a remote package: \(resolved ?? "")")

        let daemon = try Daemon(config: #"{ actions: { hello: { exec: ["echo", "hello from baton"] } } }"#)
        let press = try await run(Self.example + "/.build/debug/press", [], environment: ["BATON_SOCKET": daemon.socket])
        #expect(press.code == 0, "\(press.stdout) \(press.stderr)")
        let lines = press.stdout.split(separator: "\n").map(String.init)
        // hello starts at once, so its first update is loading (queued was committed before the answer).
        #expect(lines == ["run 1: loading", "run 1: success", "run 1 ended: success"], "\(press.stdout)")
    }
}
