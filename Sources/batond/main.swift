import Foundation

exit(await Daemon.run(Array(CommandLine.arguments.dropFirst())))
