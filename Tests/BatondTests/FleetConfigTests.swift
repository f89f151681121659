@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: the fleet settings")
struct FleetConfigTests {
    func parse(_ fields: String) throws -> Config {
        try Config.parse(Data("{ \(fields) actions: { a: { exec: [\"true\"] } } }".utf8), file: "t.json5")
    }

    func problems(_ fields: String) -> [String] {
        do {
            _ = try parse(fields)
            return []
        } catch let error as ConfigError {
            return error.problems.map { "\($0.path): \($0.message)" }
        } catch {
            return ["\(error)"]
        }
    }

    @Test("postgres turns the fleet on; host defaults to the machine's name and lease to 15s")
    func defaults() throws {
        #expect(try parse("").fleet == nil)
        let fleet = try #require(try parse(#"postgres: "postgresql://baton@db/baton","#).fleet)
        #expect(fleet.postgres == "postgresql://baton@db/baton")
        #expect(fleet.host == FleetConfig.defaultHost() && !fleet.host.isEmpty)
        #expect(fleet.lease == .seconds(15))
        let named = try #require(try parse(#"postgres: "dbname=baton", host: "web-1", lease: "5s","#).fleet)
        #expect(named.host == "web-1" && named.lease == .seconds(5))
    }

    @Test("the instance fingerprint of a connection string is stable and tells databases apart")
    func fingerprint() {
        #expect(FleetConfig.fingerprint("dbname=a") == FleetConfig.fingerprint("dbname=a"))
        #expect(FleetConfig.fingerprint("dbname=a") != FleetConfig.fingerprint("dbname=b"))
        #expect(FleetConfig.fingerprint("") == "cbf29ce484222325")
        // A running fleet's processes carry it (`BATON_INSTANCE`): the same value as before (FNV-1a, computed outside Swift).
        #expect(FleetConfig.fingerprint("host=/run/postgresql dbname=baton") == "9a512d99c06182f3")
    }

    @Test("bad fleet settings are refused, each naming its field")
    func refused() {
        #expect(problems(#"host: "web-1","#) == [#"host: only means something with "postgres" (a fleet)"#])
        #expect(problems(#"lease: "5s","#) == [#"lease: only means something with "postgres" (a fleet)"#])
        #expect(problems(#"postgres: "","#).first?.hasPrefix("postgres: expected a libpq connection string") == true)
        #expect(problems(#"postgres: "x", host: "web 1","#).first?.hasPrefix("host: expected a host name") == true)
        #expect(problems(#"postgres: "x", lease: "100ms","#) == ["lease: expected between 1s and 1h, got 100ms"])
        #expect(problems(#"postgres: 5,"#).first?.hasPrefix("postgres:") == true)
    }
}
