import BatonClient
import BatonCore

/// `baton reload`: make batond read its config again.
enum ReloadCommand {
    static let spec = CommandSpec(
        name: "reload",
        abstract: "Make batond read its config again (as SIGHUP does). A config with errors is refused whole and the old one stays.",
        arguments: "",
        options: [],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let before = try? context.ask(.actions)
        try context.ask(.reload)
        print("reloaded")
        let after = try? context.ask(.actions)
        if let before, let after, schedules(before) != schedules(after), SystemdUnits.underSystemd {
            // The generator reads the config at daemon-reload: the timers follow the new schedules.
            let (status, said) = SystemdUnits.daemonReload()
            guard status == 0 else {
                throw Failure(code: ExitCode.failure, message: "the schedules changed, but systemctl daemon-reload failed: \(said)",
                              hint: "sudo systemctl daemon-reload")
            }
            print("schedules changed: systemd reloaded its timers")
        }
        return ExitCode.success
    }

    /// Each action's schedules, jitter and name: what the generator's timers are made of.
    static func schedules(_ actions: [ActionInfo]) -> [String: [String]] {
        Dictionary(actions.map { ($0.name, ($0.schedules ?? []) + ["jitter \($0.scheduleJitter ?? 0)"]) }, uniquingKeysWith: { a, _ in a })
    }
}
