import CSQLite

/// A value a statement binds at one parameter by itself: the writer's statements of every run bind
/// their values in one call each, without a `[DatabaseValue]` made, filled and freed per
/// statement (issue 39, item 3: 8 % of the writer's instructions).
public protocol DatabaseBindable {
    func bind(to statement: Statement, at index: Int32) throws(DatabaseError)
}

extension Int64: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        try statement.check(statement.sqlite.sqlite3_bind_int64(statement.handle, index, self))
    }
}

extension Int: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) { try Int64(self).bind(to: statement, at: index) }
}

extension Int32: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) { try Int64(self).bind(to: statement, at: index) }
}

extension String: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        try statement.check(statement.sqlite.sqlite3_bind_text(statement.handle, index, self, -1, SQLITE_TRANSIENT))
    }
}

extension Array: DatabaseBindable where Element == UInt8 {
    /// A blob.
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        try statement.bind(.blob(self), at: index)
    }
}

extension Optional: DatabaseBindable where Wrapped: DatabaseBindable {
    /// NULL for nil.
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        guard let self else { return try statement.check(statement.sqlite.sqlite3_bind_null(statement.handle, index)) }
        try self.bind(to: statement, at: index)
    }
}

extension DatabaseValue: DatabaseBindable {
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) { try statement.bind(self, at: index) }
}

extension Statement {
    /// Binds `values` to the parameters, in order from 1, and runs the statement (it returns no rows).
    public func execute<each Value: DatabaseBindable>(_ values: repeat each Value) throws(DatabaseError) {
        var index: Int32 = 1
        for value in repeat each values {
            try value.bind(to: self, at: index)
            index += 1
        }
        _ = try step()
        sqlite.sqlite3_reset(handle)
    }

    func check(_ rc: Int32) throws(DatabaseError) {
        guard rc == SQLITE_OK else { throw connection.error(sql: sql) }
    }
}
