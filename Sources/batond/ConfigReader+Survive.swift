import BatonCore

extension ConfigReader {
    /// `survivesRestart`: true (the default) runs the action's process under `baton-shim`, which
    /// outlives batond; false keeps it batond's (killed at recovery, cancelled at shutdown). A
    /// pseudo-terminal's action (`tty: true`) never survives: its terminal is batond's.
    mutating func survivesRestart(_ value: JSONValue?, into action: inout Action, at: String) {
        guard let value else {
            if action.tty { action.survivesRestart = false }
            return
        }
        guard case let .bool(flag) = value else {
            return fail("\(at).survivesRestart", "expected true or false, got \(value.kind)")
        }
        if flag && action.tty {
            return fail("\(at).survivesRestart", "cannot be true with tty: true (the pseudo-terminal is batond's and goes with it)")
        }
        action.survivesRestart = flag
    }
}
