import BatonCore

extension Config {
    /// The `limits` this machine cannot enforce, one problem per action and field, with why: a
    /// config that sets one is refused (at start, at reload, by `--check-config`), never run
    /// with the limit silently ignored.
    func limitProblems(_ support: LimitSupport) -> [ConfigError.Problem] {
        actions.flatMap { action in
            support.refusals(action.limits).map { refusal in
                ConfigError.Problem(path: "actions.\(action.name).limits.\(refusal.field.rawValue)",
                                    message: "this machine cannot enforce it: \(refusal.reason)")
            }
        }
    }

    /// Throws the problems of `limitProblems`, if any.
    func checkLimits(_ support: LimitSupport, file: String) throws(ConfigError) {
        let problems = limitProblems(support)
        if !problems.isEmpty { throw ConfigError(file: file, problems: problems) }
    }
}
