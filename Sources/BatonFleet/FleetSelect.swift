import BatonCore

/// A query's SELECT list, defined once: the run's columns first (`FleetRows.runColumns`, so that
/// `FleetRows.run(row)` reads them in place), then named parts of one or more columns each. The
/// SQL it writes and the positions its reads take come from the same definition, so a column
/// added to a part, or a part added anywhere, moves every read after it with it: a merge that
/// added a pause column once made a hand-counted `runColumnCount + 5` read the database's clock
/// as "waits for its approval", and unapproved runs started.
struct FleetSelect<Part: Hashable & Sendable>: Sendable {
    /// The list as SQL, for `SELECT \(sql) FROM ...`.
    let sql: String
    /// How many columns it selects.
    let count: Int
    private let ranges: [Part: Range<Int>]

    /// `alias`: the table alias of `runs` (`r.id, r.action, ...`), nil for none.
    init(run alias: String?, _ parts: [(Part, [String])]) {
        var columns = FleetRows.runColumnList.map { column in alias.map { "\($0).\(column)" } ?? column }
        var ranges: [Part: Range<Int>] = [:]
        for (part, list) in parts {
            precondition(ranges[part] == nil && !list.isEmpty, "a part of a SELECT list is named once, with a column")
            ranges[part] = columns.count..<(columns.count + list.count)
            columns += list
        }
        self.ranges = ranges
        count = columns.count
        sql = columns.joined(separator: ", ")
    }

    /// The positions of `part`'s columns in a row.
    func range(_ part: Part) -> Range<Int> { ranges[part]! }

    /// The value of `part`'s column `index` (its first by default) in `row`.
    func value(_ row: [String?], _ part: Part, _ index: Int = 0) -> String? {
        let range = range(part)
        precondition(index < range.count, "a part's column read past its end")
        return row.count > range.lowerBound + index ? row[range.lowerBound + index] : nil
    }

    /// `part`'s columns in `row`, from its first.
    func columns(_ row: [String?], _ part: Part) -> [String?] { Array(row[range(part)]) }
}

/// The selects most reads of a run use: the run with its last seq (`last_seq`, the seq of its
/// last transition), as `FleetRows.runAndSeq` decodes it.
enum RunSeq: Hashable, Sendable { case seq }

extension FleetRows {
    /// The run's columns and its last seq, `runs` without an alias.
    static let withSeq = FleetSelect<RunSeq>(run: nil, [(.seq, ["last_seq"])])

    /// A run and its last seq, read from a row of a select with a `RunSeq`-like `seq` part.
    static func runAndSeq(_ row: [String?]) -> (run: RunSnapshot, seq: Int) {
        (run(row), Int(withSeq.value(row, .seq) ?? "") ?? 1)
    }

    /// The run's columns, as `alias.column`.
    static func runColumns(as alias: String) -> String { runColumnList.map { "\(alias).\($0)" }.joined(separator: ", ") }
}
