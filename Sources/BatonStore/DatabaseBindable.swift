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
    /// Text, kept in the statement's buffer while it fits (`Statement.bindKept`).
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        var text = self
        try statement.check(text.withUTF8 { statement.bindKept($0, at: index) })
    }
}

/// UTF-8 bytes bound as text (a blob is `[UInt8]`), kept as a `String` is (`Statement.bindKept`).
public struct DatabaseText: DatabaseBindable {
    public var utf8: [UInt8]
    public init(utf8: [UInt8]) { self.utf8 = utf8 }

    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        try statement.check(utf8.withUnsafeBufferPointer { statement.bindKept($0, at: index) })
    }
}

extension Array: DatabaseBindable where Element == UInt8 {
    /// A blob.
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) {
        try statement.bindValue(.blob(self), at: index)
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
    public func bind(to statement: Statement, at index: Int32) throws(DatabaseError) { try statement.bindValue(self, at: index) }
}

extension Statement {
    /// Binds `values` to the parameters, in order from 1, and runs the statement (it returns no rows).
    /// `values` are every parameter the SQL has: none is left from a use before, so none is cleared.
    public func execute<each Value: DatabaseBindable>(_ values: repeat each Value) throws(DatabaseError) {
        if bindings == .some { sqlite.sqlite3_clear_bindings(handle) }
        // Set first: a bind that fails leaves some parameters bound, which `bind` clears.
        bindings = .all
        texts.restart()
        var index: Int32 = 1
        for value in repeat each values {
            try value.bind(to: self, at: index)
            index += 1
        }
        precondition(index - 1 == parameterCount, "execute binds every parameter of \(sql)")
        _ = try step()
        sqlite.sqlite3_reset(handle)
    }

    func check(_ rc: Int32) throws(DatabaseError) {
        guard rc == SQLITE_OK else { throw connection.error(sql: sql) }
    }
}
