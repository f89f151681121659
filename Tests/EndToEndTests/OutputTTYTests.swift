import BatonCore
import Foundation
import Testing

/// `tty: true` (issue 24, item 2): the process writes to a pseudo-terminal, so programs that
/// buffer when not on a terminal print as they go.
@Suite("End to end: output through a pseudo-terminal", .offPool)
struct OutputTTYTests {
    @Test("with tty, stdout and stderr are one terminal: both test as one, their bytes are kept as written (no CR added), as stdout")
    func terminal() throws {
        let script = #"test -t 1 && echo out-tty; test -t 2 && echo err-tty >&2; test -t 0 || echo in-not-tty; printf 'a\nb\n'; stty -F /proc/self/fd/1 size"#
        let quoted = String(decoding: try JSONEncoder().encode(script), as: UTF8.self)
        let daemon = try Daemon(config: """
            { actions: { tty: { exec: ["sh", "-c", \(quoted)], tty: true }, plain: { exec: ["sh", "-c", \(quoted)] } } }
            """)
        #expect(try daemon.baton("run", "tty").code == 0)
        let kept = try OutputTests.kept(daemon.database, run: 1)
        #expect(String(decoding: kept.stdout, as: UTF8.self) == "out-tty\nerr-tty\nin-not-tty\na\nb\n24 80\n")
        #expect(kept.stderr.isEmpty)
        // Without it: pipes, stderr apart, and no terminal to ask the size of.
        #expect(try daemon.baton("run", "plain").code != 0)
        let plain = try OutputTests.kept(daemon.database, run: 2)
        #expect(String(decoding: plain.stdout, as: UTF8.self) == "in-not-tty\na\nb\n")
        #expect(!plain.stderr.isEmpty)
    }

    @Test("a program that buffers off a terminal (Python) is followed line by line with tty: its first line is kept while it still runs")
    func lineBuffered() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: """
            { actions: { py: { exec: ["python3", "-c", "print('early'); open('\(gate.path)').read(); print('late')"], tty: true } } }
            """)
        #expect(try daemon.baton("run", "py", "-d").stdout == "1\n")
        let early = try Eventually.value("the early line while Python waits", { try daemon.baton("logs", "1").stdout }) { !$0.isEmpty }
        #expect(early == "early\n", "a pipe would have held it until Python exited")
        gate.release()
        #expect(try daemon.baton("wait", "1").code == 0)
        #expect(try daemon.baton("logs", "1").stdout == "early\nlate\n")
    }
}
