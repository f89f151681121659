import BatonCore
import FoundationEssentials

/// A history filter as SQL over `runs` (its actions, phases, window, page and params), with the
/// arguments it numbers (`$1`…): `FleetHistory.runs` and the searches ask with it.
struct FleetFilterSQL {
    var clauses: [String] = []
    var arguments: [String?] = []
    let reverse: Bool

    init(_ filter: HistoryFilter) {
        reverse = filter.reverse
        if !filter.actions.isEmpty { clauses.append("action IN (\(marks(filter.actions)))") }
        if !filter.phases.isEmpty { clauses.append("phase IN (\(marks(filter.phases.map(\.rawValue))))") }
        if let since = filter.since { clauses.append("queued_at >= \(add(String(since.rawValue)))::bigint") }
        if let until = filter.until { clauses.append("queued_at < \(add(String(until.rawValue)))::bigint") }
        if let after = filter.after { clauses.append("id \(filter.reverse ? ">" : "<") \(add(String(after)))::bigint") }
        for (name, value) in filter.params.sorted(by: { $0.key < $1.key }) {
            clauses.append("params::jsonb ->> \(add(name)) = \(add(value))")
        }
    }

    /// Numbers the values as arguments; their marks, comma-separated.
    private mutating func marks(_ values: [String]) -> String {
        var marks: [String] = []
        for value in values { marks.append(add(value)) }
        return marks.joined(separator: ", ")
    }

    /// Numbers one more argument; its mark.
    mutating func add(_ value: String) -> String {
        arguments.append(value)
        return "$\(arguments.count)"
    }

    /// `WHERE` and the clauses, or nothing.
    var whereClause: String { clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ") }

    /// The first `limit` runs the filter selects, newest first (oldest first with `reverse`).
    func runs(limit: Int, on db: PGConnection) throws -> [RunSnapshot] {
        var query = self
        let mark = query.add(String(max(limit, 0)))
        return try db.query("SELECT \(FleetRows.runColumns) FROM runs \(whereClause) ORDER BY id \(reverse ? "ASC" : "DESC") LIMIT \(mark)::bigint",
                            query.arguments).rows.map(FleetRows.run)
    }
}
