extension SingleFlightKey {
    /// A key stored before keys were escaped, in today's form: the history's and the fleet's
    /// second migrations rewrite stored keys with it. Nil when the key is already in today's form,
    /// or is not a key of `action` for these params.
    ///
    /// The old form was `action name=value…` with values as they were (`""` for a missing one),
    /// so a value could hold ` b=`; but the run's params say how long each value is, which reads
    /// the old key one way only. It writes with `make`: should the key's form ever change again,
    /// give this function a copy of today's `escape` first, so that it goes on writing the form
    /// the migration after it expects.
    public static func rewriting(legacy key: String, action: String, params: [String: String]) -> String? {
        let bytes = Array(key.utf8)
        guard bytes.starts(with: action.utf8) else { return nil }
        var index = action.utf8.count
        var names: [String] = []
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: " "),
                  let equals = bytes[(index + 1)...].firstIndex(of: UInt8(ascii: "=")),
                  let name = String(validating: bytes[(index + 1)..<equals], as: UTF8.self),
                  !name.isEmpty, !name.utf8.contains(UInt8(ascii: " "))
            else { return nil }
            let value = (params[name] ?? "").utf8
            guard bytes[(equals + 1)...].starts(with: value) else { return nil }
            index = equals + 1 + value.count
            names.append(name)
        }
        let rewritten = make(action: action, keyParams: names, params: params)
        return rewritten.utf8.elementsEqual(key.utf8) ? nil : rewritten
    }
}
