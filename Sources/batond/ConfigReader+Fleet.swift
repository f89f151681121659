import BatonCore
import FoundationEssentials
import Glibc

/// The fleet settings: `postgres` (a libpq connection string or URI) turns the fleet on.
struct FleetConfig: Equatable {
    var postgres: String
    /// This host's name in the fleet (default: the machine's hostname).
    var host: String
    /// How long a host that stopped renewing keeps its runs.
    var lease: Duration = .seconds(15)

    /// A short, stable fingerprint of a connection string (FNV-1a, hex): the same every start.
    static func fingerprint(_ text: String) -> String {
        String(FNV1a.hash(text.utf8), radix: 16)
    }

    /// What tags this host's processes (`BATON_INSTANCE`): its name and which database, since two
    /// fleets may share a machine and a host name, and neither's guard or recovery may touch the
    /// other's processes.
    var instance: String { "fleet:\(host):\(Self.fingerprint(postgres))" }

    static func defaultHost() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension ConfigReader {
    /// `postgres: "postgresql://baton@db/baton"`, `host: "web-1"`, `lease: "15s"`; `host` and
    /// `lease` without `postgres` are refused (they would mean nothing).
    mutating func fleet(_ fields: [String: JSONValue]) -> FleetConfig? {
        guard let value = fields["postgres"] else {
            for name in ["host", "lease"] where fields[name] != nil { fail(name, "only means something with \"postgres\" (a fleet)") }
            return nil
        }
        guard let conninfo = string(value, at: "postgres") else { return nil }
        guard !conninfo.isEmpty else {
            fail("postgres", "expected a libpq connection string or URI, such as \"postgresql://baton@db.internal/baton\"")
            return nil
        }
        var fleet = FleetConfig(postgres: conninfo, host: FleetConfig.defaultHost())
        if let host = fields["host"].flatMap({ string($0, at: "host") }) {
            if host.isEmpty || host.count > 253 || host.contains(where: { $0.isWhitespace || $0 == "/" }) {
                fail("host", "expected a host name of 1 to 253 characters without spaces or \"/\", got \(Action.quoted(host))")
            } else {
                fleet.host = host
            }
        }
        if let value = fields["lease"], let lease = duration(value, at: "lease") {
            if lease < .seconds(1) || lease > .seconds(3_600) { fail("lease", "expected between 1s and 1h, got \(DurationText.format(lease))") }
            else { fleet.lease = lease }
        }
        return fleet
    }
}

extension ConfigReader {
    /// `search`: `"scan"` (the default) or `"index"`. On a fleet, `"index"` makes PostgreSQL's
    /// trigram index at start, for every host (it needs pg_trgm, and makes output writes dearer).
    mutating func search(_ value: JSONValue?) -> SearchSetting {
        guard let value else { return .scan }
        return choice(value, at: "search", SearchSetting.allCases.map(\.rawValue)).flatMap(SearchSetting.init(rawValue:)) ?? .scan
    }
}
