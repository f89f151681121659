import BatonEngine

/// Reading a definition back (`ActionCodec.encode`'s text): strict JSON, each key known and
/// given once; the first field that is not what it should be is named in the `Failure`.
extension ActionCodec {
    /// The action `text` defines. Its hooks' and needs' actions are `resolve`d by name, as this
    /// host has them now. A hook whose action it no longer has is left out (the host cannot run
    /// it); a need it cannot resolve fails the decode (`needs`): a run must never start without a
    /// need it was triggered with (one machine's run keeps its needed actions as loaded).
    public static func decode(_ text: String, resolve: (String) -> Action?) throws(Failure) -> Action {
        let decoding = Decoding()
        var text = text
        let read: Action? = text.withUTF8 { utf8 in
            var reader = JSONBytes(utf8)
            guard let action = decoding.action(&reader) else { return nil }
            guard reader.atEnd() else { decoding.fail("(definition)", "text after its object"); return nil }
            return action
        }
        guard var action = read else { throw decoding.failure ?? Failure(field: "(definition)", message: "not a definition") }
        var hooks = HookTargets(chain: decoding.chain)
        for (event, name, params) in decoding.hookTargets {
            if let target = resolve(name) { hooks.targets[event] = HookTarget(action: target, params: params) }
        }
        action.hooks = hooks
        var needs: [NeedTarget] = []
        for (name, params) in decoding.needTargets {
            guard let target = resolve(name) else { throw Failure(field: "needs", message: "needs \(name), which this host does not configure") }
            needs.append(NeedTarget(action: target, params: params))
        }
        action.needs = needs
        return action
    }

    /// One decode's state: the first failure, and the hook and need targets read by name.
    final class Decoding {
        var failure: Failure?
        var chain = false
        var hookTargets: [(HookEvent, String, [String: String])] = []
        var needTargets: [(String, [String: String])] = []

        /// Notes the first failure (a nested one comes first and is kept); false, to return.
        @discardableResult
        func fail(_ field: String, _ message: String) -> Bool {
            if failure == nil { failure = Failure(field: field, message: message) }
            return false
        }

        /// An object at `path` (with its trailing dot) whose keys `field` reads.
        func object(_ reader: inout JSONBytes, at path: String, _ field: (String, inout JSONBytes) -> Bool) -> Bool {
            let read = reader.object { key, reader in field(key, &reader) || fail(path + key, "not a valid value") }
            return read || fail(path.isEmpty ? "(definition)" : String(path.dropLast()), "not an object of distinct keys")
        }

        /// Sets `value` to what `read` reads, or fails at `field`.
        func value<T>(_ read: T?, _ set: (T) -> Void, _ field: String) -> Bool {
            guard let read else { return fail(field, "not a valid value") }
            set(read)
            return true
        }

        /// A value of a `RawRepresentable` by its raw string, else fails naming what it was.
        func raw<T: RawRepresentable>(_ reader: inout JSONBytes, _ field: String) -> T? where T.RawValue == String {
            guard let text = reader.string() else { fail(field, "not a string"); return nil }
            guard let value = T(rawValue: text) else { fail(field, "unknown value \(text)"); return nil }
            return value
        }

        static func duration(_ reader: inout JSONBytes) -> Duration? {
            guard let parts = reader.array({ $0.integer() }), parts.count == 2 else { return nil }
            return Duration(secondsComponent: parts[0], attosecondsComponent: parts[1])
        }

        static func strings(_ reader: inout JSONBytes) -> [String]? { reader.array { $0.string() } }
        static func numbers(_ reader: inout JSONBytes) -> [UInt32]? { reader.array { $0.integer(as: UInt32.self) } }
    }
}
