import BatonEngine
/// The response lines a one-shot client reads most (`status`, `actions`, `history`, a run, an
/// error), read in one pass without `JSONDecoder`, whose first use in a process instantiates the
/// metadata of every `Codable` type on the way and scans the binary's conformances: two thirds of
/// a `baton status`'s own instructions. It gives the `Response` that `JSONDecoder` would, or nil
/// whenever it is not sure: a field it does not know (a newer batond's, or the rare heavy answers:
/// `show`'s detail, stats, transitions), a key given twice, an unknown code or phase, a number that
/// is not plain. Nil is never an error: the caller then decodes the line with `JSONDecoder`.
/// `FastResponseTests` checks it against `JSONDecoder` on every field and on mutated lines.
public enum FastResponse {
    public static func read(_ bytes: [UInt8]) -> Response? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONBytes(buffer)
            guard let response = reader.response(), reader.atEnd() else { return nil }
            return response
        }
    }
}

extension JSONBytes {
    /// An optional field: null, or a value `body` reads, into `target`; false when neither.
    mutating func into<T>(_ target: inout T?, _ body: (inout JSONBytes) -> T?) -> Bool {
        guard let value = optional(body) else { return false }
        target = value
        return true
    }

    mutating func response() -> Response? {
        var response = Response(id: nil, ok: nil)
        let read = object { key, reader in
            switch key {
            case "id": return reader.into(&response.id) { $0.requestID() }
            case "ok": return reader.into(&response.ok) { $0.bool() }
            case "event": return reader.into(&response.event) { $0.string() }
            case "error": return reader.into(&response.error) { $0.wireError() }
            case "run": return reader.into(&response.run) { $0.run() }
            case "decision": return reader.into(&response.decision) { $0.string().flatMap(TriggerDecision.init(rawValue:)) }
            case "shared": return reader.into(&response.shared) { $0.bool() }
            case "cooldown": return reader.into(&response.cooldown) { $0.integer() }
            case "replaced": return reader.into(&response.replaced) { $0.array { $0.integer() } }
            case "runs": return reader.into(&response.runs) { $0.array { $0.run() } }
            case "actions": return reader.into(&response.actions) { $0.array { $0.actionInfo() } }
            case "storeProblem": return reader.into(&response.storeProblem) { $0.string() }
            case "processTree": return reader.into(&response.processTree) { $0.string() }
            case "metrics": return reader.into(&response.metrics) { $0.string() }
            case "warnings": return reader.into(&response.warnings) { $0.stringArray() }
            case "version": return reader.into(&response.version) { $0.string() }
            case "pause": return reader.into(&response.pause) { $0.actionPause() }
            case "pid": return reader.into(&response.pid) { $0.integer(as: Int32.self) }
            case "restarting": return reader.into(&response.restarting) { $0.bool() }
            case "skipped": return reader.into(&response.skipped) { $0.integer() }
            default: return false
            }
        }
        return read ? response : nil
    }

    /// An error whose code this client knows (an unknown one reads as `internal` by `JSONDecoder`'s path).
    mutating func wireError() -> WireError? {
        var code: ErrorCode?, message: String?
        var error = WireError(code: .internal, message: "")
        let read = object { key, reader in
            switch key {
            case "code": return reader.string().flatMap(ErrorCode.init(rawValue:)).map { code = $0 } != nil
            case "message": return reader.string().map { message = $0 } != nil
            case "run": return reader.into(&error.run) { $0.integer() }
            case "since": return reader.into(&error.since) { $0.integer() }
            case "next": return reader.into(&error.next) { $0.integer() }
            case "line": return reader.into(&error.line) { $0.integer().map { Int($0) } }
            case "param": return reader.into(&error.param) { $0.string() }
            default: return false
            }
        }
        guard read, let code, let message else { return nil }
        error.code = code
        error.message = message
        return error
    }

    mutating func timestamp() -> Timestamp? { integer().map(Timestamp.init(rawValue:)) }

    mutating func stringArray() -> [String]? { array { $0.string() } }
}
