import BatonCore
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
// Installed as a link named after the generator, systemd runs it with its output directories.
if CommandLine.arguments.first.map({ URL(fileURLWithPath: $0).lastPathComponent }) == ScheduleGenerator.name {
    exit(ScheduleGenerator.run(arguments))
}
if arguments.first == "--schedule-generator" { exit(ScheduleGenerator.run(Array(arguments.dropFirst()))) }
if arguments.first == "--guard-runs" { exit(RunGuard.run(Array(arguments.dropFirst()))) }
// The daemon runs as a task while the main thread waits for its exit code. Not an async main:
// that parks the main thread in dispatch_main, whose pthread_exit unwinds the thread's stack and
// so maps some 600 KiB of unwind tables (.eh_frame) into an idle batond for good. The waiting main
// thread takes the signals (as dispatch_main's sigsuspend did): every other thread blocks them
// (Dispatch's own, and those they start), and a mask inherited from the parent must not either.
// All but SIGCHLD: batond reaps through pidfds, and each run's exit would otherwise wake this
// thread for nothing (the kernel queues it to the one thread that does not block it). Blocked,
// it stays pending; an action starts with no signal blocked and none pending.
// SIGUSR2 (restart in place) and SIGHUP (reload) from the very start: until the signal watcher
// takes them, SIGUSR2 is ignored (a restart asked while batond starts, the new image's start
// included, would otherwise kill it) and SIGHUP is held blocked, pending, until the watcher's
// handler is installed (`SignalWatcher.installed`); then this thread takes it.
signal(SIGUSR2, SIG_IGN)
var mask = sigset_t()
sigemptyset(&mask)
sigaddset(&mask, SIGCHLD)
sigaddset(&mask, SIGHUP)
pthread_sigmask(SIG_SETMASK, &mask, nil)
let exitCode = Atomic<Int32>(70)
let ended = DispatchSemaphore(value: 0)
Task.detached {
    let code = await Daemon.run(arguments)
    exitCode.store(code, ordering: .releasing)
    SignalWatcher.installed.signal()
    ended.signal()
}
SignalWatcher.installed.wait()
if SignalWatcher.isInstalled.load(ordering: .acquiring) {
    sigdelset(&mask, SIGHUP)
    pthread_sigmask(SIG_SETMASK, &mask, nil)
}
ended.wait()
// A restart in place (SIGUSR2): the runs are handed over; this process becomes the new batond.
if let failure = Reexec.performIfRequested() {
    Stdio.error.write(Data("error: \(failure)\n".utf8))
    exit(1)
}
exit(exitCode.load(ordering: .acquiring))
