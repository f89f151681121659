import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--guard-runs" { exit(RunGuard.run(Array(arguments.dropFirst()))) }
exit(await Daemon.run(arguments))
