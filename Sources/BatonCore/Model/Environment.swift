import Glibc

/// This process's environment variables, read one by one with `getenv`.
///
/// `ProcessInfo.processInfo.environment` builds a dictionary of every variable on first use: a
/// million instructions of a `baton status` that needs three of them.
public enum Environment {
    /// The value of `name`, or nil when it is unset.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The variables among `names` that are set, as a dictionary (for the functions that take one).
    public static func values(_ names: String...) -> [String: String] {
        var found: [String: String] = [:]
        for name in names { found[name] = value(name) }
        return found
    }
}
