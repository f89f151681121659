import BatonCore
import FoundationEssentials

/// The fingerprints of each live host's actions (`hosts.actions`), compared with this host's:
/// an action another host defines otherwise is said at join and by `batond --check-config`;
/// its runs are not shared across the two (a join or coalesce is refused, see
/// `FleetCoordinator.decide`).
public enum FleetDefinitions {
    /// One action whose definition differs between this host and another live one.
    public struct Mismatch: Equatable, Sendable, CustomStringConvertible {
        public var action: String
        public var host: String
        public var mine: String
        public var theirs: String

        public var description: String {
            "action \(Action.quoted(action)) differs from host \(host)'s (fingerprint \(mine) here, \(theirs) there): "
                + "its runs and that host's are not shared (a join or queue there is refused with busy)"
        }
    }

    /// The fingerprint of each action, by name.
    public static func fingerprints(_ actions: [Action]) -> [String: String] {
        Dictionary(actions.map { ($0.name, $0.fingerprint) }, uniquingKeysWith: { first, _ in first })
    }

    /// The actions both define that differ, sorted by action, then host. Actions only one side
    /// has are not compared (a host without the action refuses its triggers anyway).
    public static func mismatches(mine: [String: String], others: [(host: String, actions: [String: String])]) -> [Mismatch] {
        others.flatMap { other in
            other.actions.compactMap { name, theirs -> Mismatch? in
                guard let own = mine[name], own != theirs else { return nil }
                return Mismatch(action: name, host: other.host, mine: own, theirs: theirs)
            }
        }.sorted { ($0.action, $0.host) < ($1.action, $1.host) }
    }

    /// Records this incarnation's fingerprints.
    public static func record(_ fingerprints: [String: String], incarnation: String, on db: PGConnection) throws {
        try db.query("UPDATE hosts SET actions = $2 WHERE incarnation = $1", [incarnation, JSONText.object(fingerprints)])
    }

    /// The fingerprints of the other hosts whose lease is live (not this host name's own starts).
    public static func liveHosts(except name: String, on db: PGConnection) throws -> [(host: String, actions: [String: String])] {
        try db.query("""
            SELECT DISTINCT ON (name) name, actions FROM hosts
            WHERE gone_at IS NULL AND name <> $1 AND renewed_at + lease_ms * interval '1 millisecond' >= now()
            ORDER BY name, renewed_at DESC
            """, [name]).rows.compactMap { row in
            guard let host = row[0] else { return nil }
            return (host, JSONText.params(row[1]))
        }
    }
}
