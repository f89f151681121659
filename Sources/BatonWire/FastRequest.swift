import BatonEngine
/// The request lines clients send most, read in one pass without `JSONDecoder` (which cost two
/// thirds of a `ping`'s instructions). It gives the `Request` that `JSONDecoder` and the
/// duplicate-key scan would accept, or nil whenever it is not sure: a `filter`, a field it does
/// not know, a key given twice, a number that is not a plain integer, anything malformed. Nil is
/// never an error: the caller then takes the reference path, which decides and names what was
/// wrong. So this reader only has to be right when it answers; `FastRequestTests` checks it
/// against the reference decoder on a corpus and on random and mutated lines.
public enum FastRequest {
    public static func read(_ bytes: [UInt8]) -> Request? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONBytes(buffer)
            guard let request = reader.request(), reader.atEnd() else { return nil }
            return request
        }
    }
}

/// The fields of a request as they are read, each at most once.
private struct RequestFields {
    /// The keys read so far (a request has a handful: a `Set`'s hashing cost more than the rest of a ping's read).
    var seen: [String] = []
    var request = Request.Fields(op: .ping)
    var hasOp = false

    /// Reads the value of `key` into the request; false when it is not one this reader takes.
    mutating func read(_ key: String, _ reader: inout JSONBytes) -> Bool {
        guard !seen.contains(key) else { return false }
        seen.append(key)
        switch key {
        case "id": return reader.optional { $0.requestID() }.map { request.id = $0 } != nil
        case "op":
            guard let op = reader.string().flatMap(Operation.init(rawValue:)) else { return false }
            request.op = op
            hasOp = true
            return true
        case "action": return reader.optional { $0.string() }.map { request.action = $0 } != nil
        case "key": return reader.optional { $0.string() }.map { request.key = $0 } != nil
        case "params": return reader.optional { $0.stringMap() }.map { request.params = $0 } != nil
        case "policy": return reader.optional { $0.string().flatMap(Policy.init(rawValue:)) }.map { request.policy = $0 } != nil
        default: return readScalar(key, &reader)
        }
    }

    private mutating func readScalar(_ key: String, _ reader: inout JSONBytes) -> Bool {
        switch key {
        case "detach": return reader.optional { $0.bool() }.map { request.detach = $0 } != nil
        case "force": return reader.optional { $0.bool() }.map { request.force = $0 } != nil
        case "dryRun": return reader.optional { $0.bool() }.map { request.dryRun = $0 } != nil
        case "progress": return reader.optional { $0.bool() }.map { request.progress = $0 } != nil
        case "follow": return reader.optional { $0.bool() }.map { request.follow = $0 } != nil
        case "hold": return reader.optional { $0.bool() }.map { request.hold = $0 } != nil
        case "run": return reader.optional { $0.integer() }.map { request.run = $0 } != nil
        case "from": return reader.optional { $0.integer() }.map { request.from = $0 } != nil
        case "slot": return reader.optional { $0.integer() }.map { request.slot = $0 } != nil
        case "duration": return reader.optional { $0.integer() }.map { request.duration = $0 } != nil
        case "reason": return reader.optional { $0.string() }.map { request.reason = $0 } != nil
        case "as": return reader.optional { $0.string() }.map { request.actingAs = $0 } != nil
        case "asGroup": return reader.optional { $0.string() }.map { request.asGroup = $0 } != nil
        default: return false
        }
    }
}

extension JSONBytes {
    mutating func request() -> Request? {
        var fields = RequestFields()
        guard take(UInt8(ascii: "{")) else { return nil }
        if take(UInt8(ascii: "}")) { return nil }
        repeat {
            guard let key = string(), take(UInt8(ascii: ":")), fields.read(key, &self) else { return nil }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), fields.hasOp else { return nil }
        return Request(fields.request)
    }
}
