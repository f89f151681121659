import BatonClient
import BatonCore

/// `baton actions`: the configured actions and how they behave.
enum ActionsCommand {
    static let spec = CommandSpec(
        name: "actions",
        abstract: "List the configured actions. Shows what each runs, its policy, timeout and params (key params starred).",
        arguments: "",
        options: [
            OptionSpec(long: "json", short: nil, value: nil, help: "print the actions as JSON"),
            OptionSpec(long: "names", short: nil, value: nil, help: "print only the names, one per line (for completion)"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let actions = try context.ask(.actions)
        if arguments.flag("json") {
            print(Format.json(actions))
            return ExitCode.success
        }
        if arguments.flag("names") {
            for action in actions { print(Terminal.visible(action.name)) }
            return ExitCode.success
        }
        print(table(actions), terminator: "")
        return ExitCode.success
    }

    /// The actions as a table, as a terminal shows it: key params starred, the description or else the argv.
    static func table(_ actions: [ActionInfo], width: Int? = Format.columns) -> String {
        let rows = actions.map(\.forTerminal).map { action -> [String] in
            let params = action.params.keys.sorted().map { name in
                action.keyParams.contains(name) ? "\(name)*" : name
            }.joined(separator: " ")
            return [action.name, action.policy.rawValue, action.timeout.map { DurationText.format(.microseconds($0)) } ?? "-",
                    params.isEmpty ? "-" : params, action.description ?? action.exec.joined(separator: " ")]
        }
        return Format.table(["ACTION", "POLICY", "TIMEOUT", "PARAMS", "DESCRIPTION"], rows, width: width)
    }
}
