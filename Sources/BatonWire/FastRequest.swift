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
    /// The keys read so far, a bit each (`Key`): an array of their names grew by an allocation
    /// every key or two (issue 39).
    var seen: UInt32 = 0
    var request = Request.Fields(op: .ping)
    var hasOp = false

    /// The keys this reader takes; any other sends the line the reference way.
    private enum Key {
        case id, op, action, key, params, policy, detach, force, dryRun, progress, follow, hold, run, from, slot, duration,
             reason, actingAs, asGroup

        /// The key of this name: a switch of comparisons, where `init(rawValue:)` of 19 cases
        /// hashed the name into a table (about 435 instructions a key).
        static func named(_ name: String) -> Key? {
            switch name {
            case "id": .id
            case "op": .op
            case "action": .action
            case "key": .key
            case "params": .params
            case "policy": .policy
            case "detach": .detach
            case "force": .force
            case "dryRun": .dryRun
            case "progress": .progress
            case "follow": .follow
            case "hold": .hold
            case "run": .run
            case "from": .from
            case "slot": .slot
            case "duration": .duration
            case "reason": .reason
            case "as": .actingAs
            case "asGroup": .asGroup
            default: nil
            }
        }

        var bit: UInt32 {
            switch self {
            case .id: 1 << 0
            case .op: 1 << 1
            case .action: 1 << 2
            case .key: 1 << 3
            case .params: 1 << 4
            case .policy: 1 << 5
            case .detach: 1 << 6
            case .force: 1 << 7
            case .dryRun: 1 << 8
            case .progress: 1 << 9
            case .follow: 1 << 10
            case .hold: 1 << 11
            case .run: 1 << 12
            case .from: 1 << 13
            case .slot: 1 << 14
            case .duration: 1 << 15
            case .reason: 1 << 16
            case .actingAs: 1 << 17
            case .asGroup: 1 << 18
            }
        }
    }

    /// Reads the value of `key` into the request; false when it is not one this reader takes.
    mutating func read(_ name: String, _ reader: inout JSONBytes) -> Bool {
        guard let key = Key.named(name), seen & key.bit == 0 else { return false }
        seen |= key.bit
        switch key {
        case .id: return reader.optional { $0.requestID() }.map { request.id = $0 } != nil
        case .op:
            guard let op = reader.string().flatMap(Operation.init(rawValue:)) else { return false }
            request.op = op
            hasOp = true
            return true
        case .action: return reader.optional { $0.string() }.map { request.action = $0 } != nil
        case .key: return reader.optional { $0.string() }.map { request.key = $0 } != nil
        case .params: return reader.optional { $0.stringMap() }.map { request.params = $0 } != nil
        case .policy: return reader.optional { $0.string().flatMap(Policy.init(rawValue:)) }.map { request.policy = $0 } != nil
        default: return readScalar(key, &reader)
        }
    }

    private mutating func readScalar(_ key: Key, _ reader: inout JSONBytes) -> Bool {
        switch key {
        case .detach: return reader.optional { $0.bool() }.map { request.detach = $0 } != nil
        case .force: return reader.optional { $0.bool() }.map { request.force = $0 } != nil
        case .dryRun: return reader.optional { $0.bool() }.map { request.dryRun = $0 } != nil
        case .progress: return reader.optional { $0.bool() }.map { request.progress = $0 } != nil
        case .follow: return reader.optional { $0.bool() }.map { request.follow = $0 } != nil
        case .hold: return reader.optional { $0.bool() }.map { request.hold = $0 } != nil
        case .run: return reader.optional { $0.integer() }.map { request.run = $0 } != nil
        case .from: return reader.optional { $0.integer() }.map { request.from = $0 } != nil
        case .slot: return reader.optional { $0.integer() }.map { request.slot = $0 } != nil
        case .duration: return reader.optional { $0.integer() }.map { request.duration = $0 } != nil
        case .reason: return reader.optional { $0.string() }.map { request.reason = $0 } != nil
        case .actingAs: return reader.optional { $0.string() }.map { request.actingAs = $0 } != nil
        case .asGroup: return reader.optional { $0.string() }.map { request.asGroup = $0 } != nil
        case .id, .op, .action, .key, .params, .policy: return false
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
