import FoundationEssentials
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
// Installed as a link named after the generator, systemd runs it with its output directories.
if CommandLine.arguments.first.map({ URL(fileURLWithPath: $0).lastPathComponent }) == ScheduleGenerator.name {
    exit(ScheduleGenerator.run(arguments))
}
if arguments.first == "--schedule-generator" { exit(ScheduleGenerator.run(Array(arguments.dropFirst()))) }
if arguments.first == "--guard-runs" { exit(RunGuard.run(Array(arguments.dropFirst()))) }
exit(await Daemon.run(arguments))
