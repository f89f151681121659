import CLibPQ
import FoundationEssentials
import Glibc

/// One libpq connection, owned by one thread (a `PGWorker`'s) and never shared, so not
/// `Sendable`. Queries go in text format: every parameter is a string or NULL, and every value
/// comes back as a string or nil, which the callers parse. A query (SELECT, INSERT, UPDATE,
/// DELETE, WITH) is prepared on the connection the first time it is sent, in the same round
/// trip, and executed by name from then on: the server parses and plans it once per connection
/// (`PreparedStatements`); anything else (BEGIN, COMMIT, NOTIFY…) is sent as it is.
public final class PGConnection {
    private let handle: OpaquePointer
    private let pq: BatonLibPQ
    private var prepared = PreparedStatements()
    /// What this connection remembers of the `revisions` and `definitions` tables (`FleetRunDefinitions.Cache`):
    /// confined, as the connection is, to the one thread that uses it, so it needs no lock.
    var definitions = FleetRunDefinitions.Cache()
    /// libpq raised an error of its own (one without a SQLSTATE: "server closed the connection
    /// unexpectedly"), which it may do before its status says the connection is bad.
    private var failed = false

    /// Connects with a libpq connection string or URI. `defaults` are libpq keywords applied
    /// before the string's own settings, which win over them (`PGSSLMODE` and friends still
    /// apply where neither says).
    public init(_ conninfo: String, defaults: [String: String] = [:]) throws(PGError) {
        let pairs = defaults.sorted { $0.key < $1.key } + [("dbname", conninfo)]
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer { (keywords + values).forEach { free($0) } }
        let k = keywords.map { UnsafePointer($0) } + [nil]
        let v = values.map { UnsafePointer($0) } + [nil]
        pq = try LibPQ.functions()
        guard let connection = pq.PQconnectdbParams(k, v, 1) else { throw PGError(message: "out of memory") }
        handle = connection
        guard pq.PQstatus(handle) == CONNECTION_OK else {
            // deinit runs for an instance that throws once fully initialised: it finishes the handle.
            let message = Self.trimmed(pq.PQerrorMessage(handle))
            throw PGError(sqlState: "08001", message: message)
        }
        // Server notices ("relation already exists, skipping") are not batond's to print.
        _ = pq.PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { pq.PQfinish(handle) }

    /// How many statements this connection has prepared.
    var preparedCount: Int { prepared.count }

    /// Whether the connection is still up, as libpq last saw it.
    public var isOK: Bool { !failed && pq.PQstatus(handle) == CONNECTION_OK }

    /// The socket, for `poll` while listening for notifications.
    public var socket: Int32 { pq.PQsocket(handle) }

    /// Runs one statement with `$1`, `$2`… parameters; returns its rows. `planEachTime`: never
    /// prepared, so that PostgreSQL plans it for the values given (a statement whose generic
    /// plan is bad whatever the values).
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = [], planEachTime: Bool = false) throws(PGError) -> PGRows {
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        let plan = planEachTime ? PreparedStatements.Plan.plain : prepared.plan(sql)
        if case let .prepare(name) = plan {
            guard let made = pq.PQprepare(handle, name, sql, Int32(pointers.count), nil) else {
                throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle)))
            }
            defer { pq.PQclear(made) }
            guard pq.PQresultStatus(made) == PGRES_COMMAND_OK else { throw failure(of: made) }
            prepared.made(sql, name)
        }
        let sent = switch plan {
        case let .prepare(name), let .execute(name): pq.PQexecPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
        case .plain: pq.PQexecParams(handle, sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
        }
        guard let result = sent else {
            throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle)))
        }
        defer { pq.PQclear(result) }
        switch pq.PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return PGRows(result, pq)
        default:
            throw failure(of: result)
        }
    }

    /// Runs one statement given with its parameters.
    @discardableResult
    public func query(_ statement: (sql: String, parameters: [String?])) throws(PGError) -> PGRows {
        try query(statement.sql, statement.parameters)
    }

    /// Sends several statements in one round trip (libpq's pipeline mode) and returns each one's
    /// rows, in order. The first statement that fails throws (the ones after it were not run);
    /// inside a transaction the caller rolls back, as after any error.
    public func pipeline(_ statements: [(sql: String, parameters: [String?])]) throws(PGError) -> [PGRows] {
        guard pq.PQenterPipelineMode(handle) == 1 else { throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle))) }
        defer { _ = pq.PQexitPipelineMode(handle) }
        // What each result will be, in order: a prepare's (the statement's text and name) or a statement's (nil).
        var expected: [(sql: String, name: String)?] = []
        var pending: [String: String] = [:]
        for statement in statements {
            let copies = statement.parameters.map { $0.map { strdup($0) } ?? nil }
            defer { copies.forEach { free($0) } }
            let pointers = copies.map { UnsafePointer($0) }
            var plan = pending[statement.sql].map(PreparedStatements.Plan.execute) ?? prepared.plan(statement.sql)
            if case let .prepare(name) = plan {
                guard pq.PQsendPrepare(handle, name, statement.sql, Int32(pointers.count), nil) == 1 else {
                    throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle)))
                }
                expected.append((statement.sql, name))
                pending[statement.sql] = name
                plan = .execute(name)
            }
            let sent = switch plan {
            case let .prepare(name), let .execute(name): pq.PQsendQueryPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
            case .plain: pq.PQsendQueryParams(handle, statement.sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
            }
            guard sent == 1 else { throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle))) }
            expected.append(nil)
        }
        guard pq.PQpipelineSync(handle) == 1 else { throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle))) }
        var results: [PGRows] = []
        var failure: PGError?
        var index = 0
        // Each command's result is followed by a NULL; the sync's result ends the pipeline.
        while true {
            guard let result = pq.PQgetResult(handle) else {
                if !isOK { throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle))) }
                continue
            }
            defer { pq.PQclear(result) }
            let status = pq.PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                if let failure { throw failure }
                return results
            }
            let preparing = index < expected.count ? expected[index] : nil
            index += 1
            switch status {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                if let preparing { prepared.made(preparing.sql, preparing.name) } else { results.append(PGRows(result, pq)) }
            case PGRES_PIPELINE_ABORTED:
                break
            default:
                if failure == nil { failure = self.failure(of: result) }
            }
        }
    }

    /// Runs statements that take no parameters (several may be separated by `;`; none, in a text
    /// of comments only, is no error).
    public func execute(_ sql: String) throws(PGError) {
        guard let result = pq.PQexec(handle, sql) else { throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle))) }
        defer { pq.PQclear(result) }
        let status = pq.PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw failure(of: result, primaryOnly: false)
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(opening: []) { _ in try body() }
    }

    /// As `transaction`, its first statements `opening` sent in the round trip of the BEGIN;
    /// `body` gets their rows.
    public func transaction<T>(opening: [(sql: String, parameters: [String?])], _ body: ([PGRows]) throws -> T) throws -> T {
        try transaction(opening: opening) { opened in (try body(opened), []) }.value
    }

    /// As `transaction(opening:_:)`, and `body` also names its last statements, sent in the
    /// round trip of the COMMIT; their rows come back with its value once it committed.
    public func transaction<T>(opening: [(sql: String, parameters: [String?])],
                               closing body: ([PGRows]) throws -> (T, [(sql: String, parameters: [String?])])) throws -> (value: T, closed: [PGRows]) {
        // The definitions a transaction inserts are written once it commits (`FleetRunDefinitions.Cache`).
        definitions.ended(committed: false)
        do {
            let opened = opening.isEmpty ? [] : try pipeline([("BEGIN", [])] + opening).dropFirst()
            if opening.isEmpty { try execute("BEGIN") }
            let (value, closing) = try body(Array(opened))
            let closed = closing.isEmpty ? [] : try pipeline(closing + [("COMMIT", [])]).dropLast()
            if closing.isEmpty { try execute("COMMIT") }
            definitions.ended(committed: true)
            return (value, Array(closed))
        } catch {
            definitions.ended(committed: false)
            if isOK { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Reads what the server sent and returns the notifications that arrived (channel, payload).
    public func notifications() throws(PGError) -> [(channel: String, payload: String)] {
        guard pq.PQconsumeInput(handle) == 1 else { throw PGError(sqlState: "08006", message: Self.trimmed(pq.PQerrorMessage(handle))) }
        var list: [(String, String)] = []
        while let notice = pq.PQnotifies(handle) {
            list.append((String(cString: notice.pointee.relname), String(cString: notice.pointee.extra)))
            pq.PQfreemem(notice)
        }
        return list
    }

    /// The error a failed result carries. One without a SQLSTATE was raised by libpq, not the
    /// server: the connection is not to be trusted again (`isOK` is false from then on), and the
    /// error is a connection problem (08006).
    private func failure(of result: OpaquePointer, primaryOnly: Bool = true) -> PGError {
        let state = pq.PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let primary = primaryOnly ? pq.PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } : nil
        if state == nil { failed = true }
        return PGError(sqlState: state ?? "08006", message: primary ?? Self.trimmed(pq.PQerrorMessage(handle)))
    }

    static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        return String(String(cString: text).trimmingWhitespace())
    }
}

/// The rows of a result, copied out of libpq's memory.
public struct PGRows: Sendable {
    public let rows: [[String?]]
    /// Rows changed by an INSERT, UPDATE or DELETE.
    public let affected: Int

    /// Rows as given (what a test hands the code that reads results).
    init(rows: [[String?]], affected: Int = 0) {
        self.rows = rows
        self.affected = affected
    }

    init(_ result: OpaquePointer, _ pq: BatonLibPQ) {
        let count = pq.PQntuples(result), fields = pq.PQnfields(result)
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            rows.append((0..<fields).map { field in
                pq.PQgetisnull(result, row, field) == 1 ? nil : pq.PQgetvalue(result, row, field).map { String(cString: $0) }
            })
        }
        self.rows = rows
        affected = pq.PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }

    public var first: [String?]? { rows.first }
}

/// An error from PostgreSQL or libpq: its SQLSTATE when known, and the server's message.
public struct PGError: Error, CustomStringConvertible, Sendable {
    public var sqlState: String?
    public var message: String

    public init(sqlState: String? = nil, message: String) {
        self.sqlState = sqlState
        self.message = message
    }

    public var description: String { message }

    /// A unique index refused the row (23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// The connection is gone or was never made (class 08, or a server shutting down: 57P0x).
    public var isConnectionProblem: Bool {
        guard let state = sqlState else { return false }
        return state.hasPrefix("08") || state.hasPrefix("57P")
    }
    /// The server is out of disk or memory (class 53: 53100 disk_full, 53200 out_of_memory…).
    public var isOutOfSpace: Bool { sqlState?.hasPrefix("53") == true }
    /// A deadlock or serialization failure: the transaction may be tried again.
    public var isRetryable: Bool { sqlState == "40P01" || sqlState == "40001" }
}

/// The statements a connection has prepared, by their text: a query is prepared the first time
/// it is sent (as `b1`, `b2`…) and executed by name after. At most `limit` are kept (texts
/// built with values in them would otherwise grow the server's memory without end): past it a
/// query is sent as it is, parsed each time.
struct PreparedStatements {
    static let limit = 256

    enum Plan: Equatable {
        /// Prepare it as `name`, then execute it.
        case prepare(String)
        case execute(String)
        /// Send it as it is (not a query, or past the limit).
        case plain
    }

    private var names: [String: String] = [:]
    /// Names handed out, prepared or not (a prepare that failed leaves its name unused).
    private var handedOut = 0

    /// How to send `sql`; a prepare it plans takes a name never handed out before.
    mutating func plan(_ sql: String) -> Plan {
        if let name = names[sql] { return .execute(name) }
        guard names.count < Self.limit, Self.isQuery(sql) else { return .plain }
        handedOut += 1
        return .prepare("b\(handedOut)")
    }

    /// The server answered the prepare of `sql` as `name`.
    mutating func made(_ sql: String, _ name: String) {
        names[sql] = name
    }

    var count: Int { names.count }

    /// Whether the text is one query the server can prepare: it starts with SELECT, INSERT,
    /// UPDATE, DELETE or WITH (and carries no second statement: `;` only at its end).
    static func isQuery(_ sql: String) -> Bool {
        let text = sql.drop { $0.isWhitespace }
        let word = text.prefix { $0.isLetter }.uppercased()
        guard ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(word) else { return false }
        let body = text.trimmingWhitespace()
        return !body.dropLast(body.hasSuffix(";") ? 1 : 0).contains(";")
    }
}
