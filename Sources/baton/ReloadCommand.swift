import BatonClient
import BatonCore
import FoundationEssentials
import Glibc

/// `baton reload`: make batond read its config again, say what it warned of, and, under
/// systemd, make the schedules' timers follow the new config.
enum ReloadCommand {
    static let spec = CommandSpec(
        name: "reload",
        abstract: """
            Make batond read its config again (as SIGHUP does) and print its warnings. A config with errors is refused \
            whole, the old one stays, and reload exits 2. Under systemd, when an action's schedule changed, it runs \
            systemctl daemon-reload (the generator writes the timers again) and starts, restarts or stops the timers that \
            changed. batond.service's ExecReload runs it, so systemctl reload batond fails on a refused config.
            """,
        arguments: "",
        options: [],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let before = try? context.ask(.actions)
        let warnings = try context.ask(.reload)
        for warning in warnings { Stdio.error.write(Data("warning: \(warning)\n".utf8)) }
        print("reloaded")
        guard let after = try? context.ask(.actions) else { return ExitCode.success }
        // Not knowing the actions before, every timer is started (a start of an active timer does nothing).
        let plan = TimerPlan(before: before ?? [], after: after)
        guard !plan.isEmpty else { return ExitCode.success }
        let changed = (plan.start + plan.restart + plan.stop).joined(separator: ", ")
        guard SystemdUnits.underSystemd else {
            print("schedules changed: \(changed) (\(SchedulesCommand.notUnderSystemd))")
            return ExitCode.success
        }
        // Only root may daemon-reload and start timers; the generator reads the system's config only.
        guard geteuid() == 0 else {
            print("schedules changed: \(changed) (not root: systemd's timers are as they were; sudo baton reload makes them follow)")
            return ExitCode.success
        }
        try follow(plan)
        print("schedules changed: " + plan.lines.joined(separator: "; "))
        return ExitCode.success
    }

    /// Each change of `plan` around a daemon-reload (the generator writes the new timers). The
    /// timers removed are stopped before it, while their units are still there: a timer still
    /// waiting when its unit goes is left `failed` by systemd (it has nothing to wait for), and a
    /// stop does not clear that; stopped first, it is simply gone. Those restarted and started, after.
    static func follow(_ plan: TimerPlan) throws {
        try perform("stop", plan.stop)
        let (status, said) = SystemdUnits.daemonReload()
        guard status == 0 else {
            throw Failure(code: ExitCode.failure, message: "the schedules changed, but systemctl daemon-reload failed: \(said)",
                          hint: "sudo systemctl daemon-reload, then baton reload")
        }
        // A stopped timer that had failed before stays listed until its failure is forgotten.
        if !plan.stop.isEmpty { _ = SystemdUnits.perform("reset-failed", plan.stop.map(TimerPlan.unit)) }
        try perform("restart", plan.restart)
        try perform("start", plan.start)
    }

    /// `systemctl VERB` of the timers of `actions`, or a `Failure` naming what systemctl said.
    static func perform(_ verb: String, _ actions: [String]) throws {
        guard !actions.isEmpty else { return }
        let units = actions.map(TimerPlan.unit)
        let (status, said) = SystemdUnits.perform(verb, units)
        guard status == 0 else {
            throw Failure(code: ExitCode.failure, message: "the schedules changed, but systemctl \(verb) failed: \(said)",
                          hint: "sudo systemctl \(verb) \(units.joined(separator: " ")); journalctl -b -u \(units[0])")
        }
    }
}
