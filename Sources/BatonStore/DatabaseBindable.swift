import CSQLite

/// A value a statement binds at one parameter by itself: the writer's statements of every run bind
/// their values in one call each, without a `[DatabaseValue]` made, filled and freed per
/// statement (issue 39, item 3: 8 % of the writer's instructions). Only `execute` binds through it:
/// the `Statement.ExecuteKey` it takes has no public initializer, so no caller binds around the
/// statement's `bindings` (which `reset` reads to know whether to clear).
public protocol DatabaseBindable {
    func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError)
}

extension Int64: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) {
        try statement.check(statement.sqlite.sqlite3_bind_int64(statement.handle, index, self))
    }
}

extension Int: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) { try Int64(self).bind(to: statement, at: index, key) }
}

extension Int32: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) { try Int64(self).bind(to: statement, at: index, key) }
}

extension String: DatabaseBindable {
    /// Text, kept in the statement's buffer while it fits (`Statement.bindKept`).
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) {
        var text = self
        try statement.check(text.withUTF8 { statement.bindKept($0, at: index) })
    }
}

/// UTF-8 bytes bound as text (a blob is `[UInt8]`), kept as a `String` is (`Statement.bindKept`).
public struct DatabaseText: DatabaseBindable {
    public var utf8: [UInt8]
    public init(utf8: [UInt8]) { self.utf8 = utf8 }

    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) {
        try statement.check(utf8.withUnsafeBufferPointer { statement.bindKept($0, at: index) })
    }
}

extension Array: DatabaseBindable where Element == UInt8 {
    /// A blob.
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) {
        try statement.bindValue(.blob(self), at: index)
    }
}

extension Optional: DatabaseBindable where Wrapped: DatabaseBindable {
    /// NULL for nil.
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) {
        guard let self else { return try statement.check(statement.sqlite.sqlite3_bind_null(statement.handle, index)) }
        try self.bind(to: statement, at: index, key)
    }
}

extension DatabaseValue: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32, _ key: Statement.ExecuteKey) throws(DatabaseError) { try statement.bindValue(self, at: index) }
}

extension Statement {
    /// What a `DatabaseBindable` needs to bind: only `execute` makes one, after it has set
    /// `bindings` to `.all` (a value bound any other way would be left, unseen, for the next use).
    /// Empty: the statement stays a parameter of its own (a first version held it in the key,
    /// `unowned(unsafe)`: the writer did 4,800 more instructions a run).
    public struct ExecuteKey {
        init() {}
    }

    /// Binds `values` to the parameters, in order from 1, and runs the statement (it returns no rows).
    /// `values` are every parameter the SQL has: none is left from a use before, so none is cleared.
    /// Fewer values than parameters is a caller's bug: it throws (SQLITE_MISUSE, naming the SQL)
    /// before the step, so no parameter keeps a value from a use before; the writer refuses that
    /// item alone (`writeIsolated`) and batond goes on. More values than parameters throws
    /// SQLITE_RANGE from the bind.
    public func execute<each Value: DatabaseBindable>(_ values: repeat each Value) throws(DatabaseError) {
        if bindings == .some { sqlite.sqlite3_clear_bindings(handle) }
        // Set first: a bind that fails leaves some parameters bound, which `bind` clears.
        bindings = .all
        texts.restart()
        let key = ExecuteKey()
        var index: Int32 = 1
        for value in repeat each values {
            try value.bind(to: self, at: index, key)
            index += 1
        }
        guard index - 1 == parameterCount else {
            throw DatabaseError(code: SQLITE_MISUSE, message: "execute bound \(index - 1) of \(parameterCount) parameters", sql: sql)
        }
        _ = try step()
        sqlite.sqlite3_reset(handle)
        isReset = true
    }

    func check(_ rc: Int32) throws(DatabaseError) {
        guard rc == SQLITE_OK else { throw connection.error(sql: sql) }
    }
}
