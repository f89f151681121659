import CSQLite
import Glibc

/// A statement's room for the text `execute` binds: each value is copied in after the one before
/// and bound `SQLITE_STATIC`, so SQLite reads it in place instead of allocating a copy of its own
/// (issue 39: binding a `String` cost the writer about 1,000 instructions, Swift's C string and
/// SQLite's copy, 18 times a run). `execute` starts it again each time, after the step before has
/// read it; it lives as long as its statement, so what SQLite still points at stays valid.
/// Not copyable: it owns its memory, which it frees once, when the statement's properties are
/// destroyed (after `Statement.deinit` has finalized the statement: nothing points at it any more).
struct TextBuffer: ~Copyable {
    /// How many bytes a statement keeps for its text: the writer's values are short (a key, a
    /// phase, a detail's JSON); a longer one (an output tail) is bound as a copy.
    static let capacity = 1_024

    private var base: UnsafeMutablePointer<UInt8>?
    private var used = 0

    /// Nothing kept: the next values are copied from the start.
    mutating func restart() { used = 0 }

    /// A copy of `bytes` with room left for it, made now; nil when it does not fit.
    mutating func keep(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<UInt8>? {
        guard bytes.count <= Self.capacity - used else { return nil }
        if base == nil { base = .allocate(capacity: Self.capacity) }
        let start = base! + used
        if let source = bytes.baseAddress { start.initialize(from: source, count: bytes.count) }
        used += bytes.count
        return UnsafePointer(start)
    }

    /// Whether `pointer` points into the kept text: SQLite read a value bound in place there
    /// (`StatementBindingTests.readInPlace`), not a copy of its own.
    func holds(_ pointer: UnsafeRawPointer?) -> Bool {
        guard let base, let pointer else { return false }
        return pointer >= UnsafeRawPointer(base) && pointer < UnsafeRawPointer(base + Self.capacity)
    }

    deinit { base?.deallocate() }
}

extension Statement {
    /// What the parameters hold since the last `reset`.
    enum Bindings {
        /// Nothing bound since the last clear.
        case cleared
        /// Every parameter bound by `execute` (some of them maybe to `texts`).
        case all
        /// Some bound by `bind`, which the next `reset` clears.
        case some
    }

    /// Binds UTF-8 text kept in the statement's `texts` (no copy by SQLite), or as a copy when it
    /// does not fit. As with a C string, the text ends at its first NUL (what binding a `String`
    /// as `const char *` did).
    func bindKept(_ utf8: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        let text = Self.cString(utf8)
        guard let kept = texts.keep(text) else { return bindCopy(text, at: index) }
        // SQLITE_STATIC (a NULL destructor): SQLite reads the bytes in place, until it next binds.
        return sqlite.sqlite3_bind_text(handle, index, UnsafeRawPointer(kept).assumingMemoryBound(to: CChar.self), Int32(text.count), nil)
    }

    /// Binds UTF-8 text that SQLite copies (up to its first NUL, as a C string's).
    func bindCopy(_ utf8: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        let text = Self.cString(utf8)
        // A non-NULL pointer even for empty text: SQLite binds NULL for a NULL pointer.
        let start = UnsafeRawPointer(text.baseAddress) ?? UnsafeRawPointer(Self.empty.utf8Start)
        return sqlite.sqlite3_bind_text(handle, index, start.assumingMemoryBound(to: CChar.self), Int32(text.count), SQLITE_TRANSIENT)
    }

    /// `utf8` up to its first NUL.
    private static func cString(_ utf8: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        guard let start = utf8.baseAddress, let nul = memchr(start, 0, utf8.count) else { return utf8 }
        return UnsafeBufferPointer(start: start, count: UnsafeRawPointer(nul) - UnsafeRawPointer(start))
    }

    /// Where empty text points.
    private static let empty: StaticString = ""
}
