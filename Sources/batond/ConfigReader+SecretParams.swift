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

    /// A fleet's hosts hash a secret's value under one key, so that equal values meet in one
    /// key on every host: with an action that has a secret param, `secretsKey` must name the
    /// file each host holds (batond makes none in a fleet: each host would make its own).
    mutating func secretsKeyInFleet(_ config: Config) {
        guard config.fleet != nil, config.secretsKey == nil, let action = config.actions.first(where: { !$0.secretParams.isEmpty }) else { return }
        fail("secretsKey", "missing: actions.\(action.name) has a secret param, and a fleet's hosts must hash secrets under one key: "
            + "secretsKey: \"/etc/baton/secrets.key\" naming a file of 32 random bytes, mode 0600, the same on every host "
            + "(head -c 32 /dev/urandom > /etc/baton/secrets.key)")
    }

    /// `"/etc/baton/secrets.key"`: an absolute path.
    mutating func absolutePath(_ value: JSONValue, at here: String) -> String? {
        guard let path = string(value, at: here) else { return nil }
        guard path.hasPrefix("/") else {
            fail(here, "expected an absolute path, got \(Action.quoted(path))")
            return nil
        }
        return path
    }
}
