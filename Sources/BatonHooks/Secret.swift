/// A hook's shared secret: read from a file or a systemd credential, never shown. Its
/// description is a placeholder, so no log line, error or dump can carry the bytes.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret's bytes (a file's content without its final line end).
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// A file's content as a secret: one trailing LF or CRLF (what `echo` and editors add) is
    /// not part of it.
    public init(fileContent: [UInt8]) {
        var bytes = fileContent
        if bytes.last == 10 { bytes.removeLast() }
        if bytes.last == 13 { bytes.removeLast() }
        self.bytes = bytes
    }

    public var description: String { "(secret)" }
    public var debugDescription: String { "(secret)" }
}
