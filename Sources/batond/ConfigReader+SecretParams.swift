import BatonCore

/// `params: { token: { secret: true } }`: a param whose value reaches the process and nothing else.
extension ConfigReader {
    /// `secret: true|false`. A secret has no default: a default is in the config in clear, and
    /// would be the value of every run that does not pass one (put it in the action's `env`).
    mutating func secretFlag(_ value: JSONValue, hasDefault: Bool, at here: String) -> Bool {
        guard case let .bool(flag) = value else {
            fail("\(here).secret", "expected true or false, got \(value.kind)")
            return false
        }
        if flag && hasDefault {
            fail("\(here).default", "a secret param has no default (the config keeps it in clear): "
                + "pass it with each trigger, or put a fixed value in the action's env")
        }
        return flag
    }

    /// A fleet's runs may start on another host than the one the trigger came to, and only
    /// that host's memory holds a secret's value: refused, naming the actions.
    mutating func secretsOffFleet(_ config: Config) {
        guard config.fleet != nil else { return }
        for action in config.actions where !action.secretParams.isEmpty {
            fail("actions.\(action.name).params.\(action.secretParams[0]).secret",
                 "secret params are not supported on a fleet yet (a run may start on a host that never saw the value)")
        }
    }
}
