import BatonIPC

extension HTTPRequestHead {
    /// The value of a field given exactly once; nil when it is missing or given more than once
    /// (two signatures are no signature).
    func only(_ name: String) -> String? {
        var found: String?
        for field in fields where field.name == name {
            guard found == nil else { return nil }
            found = field.value
        }
        return found
    }
}
