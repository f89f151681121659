import BatonCore
import Foundation
import Testing

/// Issue 24, item 5, in a real browser: a run's page shows its output live and whole, stderr apart,
/// hostile output as text, colours as classes, follows the end unless the reader scrolled up, and
/// downloads the raw bytes.
@Suite("End to end: a run's output in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardOutputBrowserTests {
    /// Three phases, each ended by the gate: 120 stdout lines and hostile text; 30 stderr lines; 30
    /// stdout lines and `the end`.
    static let live = #"""
        i=1; while [ $i -le 120 ]; do echo "line $i"; i=$((i+1)); done
        printf '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">\n'
        printf '\033[31mred\033[0m plain \033[1;92mbold green\033[0m\n'
        printf '\033]0;evil title\007\033]8;;http://evil.example/\033\\link\033]8;;\033\\ \033[2J\033[Hafter\n'
        cat "$GATE" >/dev/null
        i=1; while [ $i -le 30 ]; do echo "stderr $i" >&2; i=$((i+1)); done
        cat "$GATE" >/dev/null
        i=1; while [ $i -le 30 ]; do echo "again $i"; i=$((i+1)); done
        echo "the end"
        """#
    static let ended = #"""
        echo "first out"
        echo "an error line" >&2
        printf '<b>not bold</b> \033[34mblue\033[0m \033[1;32mok\033[0m\n'
        """#
    static let endedBytes = "first out\n".utf8.count + "an error line\n".utf8.count
        + "<b>not bold</b> \u{1b}[34mblue\u{1b}[0m \u{1b}[1;32mok\u{1b}[0m\n".utf8.count

    static func daemon(_ gate: FifoGate) throws -> Daemon {
        for (name, script) in [("live.sh", live), ("ended.sh", ended)] {
            try script.write(toFile: gate.directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return try Daemon(config: """
            { actions: { live: { exec: ["/bin/sh", "\(gate.directory)/live.sh"], env: { GATE: "\(gate.path)" } },
                         ended: { exec: ["/bin/sh", "\(gate.directory)/ended.sh"] } } }
            """)
    }

    /// Signs a browser in on the dashboard's first address, then opens run `id`'s page.
    static func runPage(_ dashboard: DashboardProcess, _ id: Int, _ body: @escaping @Sendable (WebDriver) throws -> Void) async throws {
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#connection').dataset.state === 'live'"))
            try browser.open("http://\(dashboard.hostPort)/runs/\(id)")
            try body(browser)
        }
    }

    static let box = "document.querySelector('#output')"
    static let atEnd = "(\(box).scrollTop + \(box).clientHeight >= \(box).scrollHeight - 8)"

    @Test("a live run: output as it comes, hostile text as text, colours as classes, stderr apart and in order; follows the end unless scrolled up")
    func liveRun() async throws {
        let gate = try FifoGate()
        let daemon = try Self.daemon(gate)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "live", "--detach").stdout == "1\n")
        try await Self.runPage(dashboard, 1) { browser in
            #expect(try browser.wait(until: "\(Self.box).textContent.includes('after\\n')"))
            // The run's facts come on a request of their own, which under load may answer after the output.
            #expect(try browser.wait(until: "document.querySelector('#run-state').textContent.startsWith('loading')"), "the run is still in flight")
            // Scrolled to the end as it came, and it does scroll.
            #expect(try browser.script("return \(Self.box).scrollHeight > \(Self.box).clientHeight && \(Self.atEnd);") as? Bool == true)
            // Hostile output is text: no element made of it, no script ran, no escape left in it.
            let text = try browser.text("#output")
            #expect(text.contains(#"<script>window.pwned=1</script><img src=x onerror="window.pwned=2">"#))
            #expect(try browser.script("return document.querySelectorAll('#output *:not(span)').length + (window.pwned === undefined ? 0 : 100);") as? Int == 0)
            #expect(!text.contains("\u{1b}") && !text.contains("evil") && !text.contains("]8;;") && !text.contains("[2J"), "\(text.suffix(120).debugDescription)")
            #expect(text.contains("link after\n"))
            #expect(try browser.script("return document.title;") as? String == "Run 1 · live · Baton")
            #expect(try browser.text("#output .ansi-fg-1") == "red")
            #expect(try browser.text("#output .ansi-bold.ansi-fg-10") == "bold green")
            #expect(try browser.script("return document.querySelectorAll('#output .out-stderr').length;") as? Int == 0)

            // Scrolled up: new output (stderr) comes in but the view stays where the reader is.
            try browser.script("\(Self.box).scrollTop = 120;")
            gate.release()
            #expect(try browser.wait(until: "\(Self.box).textContent.includes('stderr 30\\n')"))
            #expect(try browser.script("return \(Self.box).scrollTop;") as? Int == 120, "the reader scrolled up: the view stays")
            let stderrStyle = "getComputedStyle(document.querySelector('#output .out-stderr'))"
            let stdoutStyle = "getComputedStyle(document.querySelector('#output .out-stdout:not([class*=ansi])'))"
            #expect(try browser.script("return \(stderrStyle).color !== \(stdoutStyle).color && \(stderrStyle).backgroundColor !== \(stdoutStyle).backgroundColor;") as? Bool == true,
                    "stderr looks apart")
            #expect(try browser.text("#output .out-stderr").hasPrefix("stderr 1\nstderr 2\n"))

            // Back at the end: it follows again, to the run's end.
            try browser.script("\(Self.box).scrollTop = \(Self.box).scrollHeight;")
            gate.release()
            #expect(try browser.wait(until: "\(Self.box).textContent.endsWith('again 30\\nthe end\\n')"))
            #expect(try browser.wait(until: "document.querySelector('#output-note').dataset.state === 'ended'"))
            #expect(try browser.script("return \(Self.atEnd);") as? Bool == true, "the view followed the end")
            // stdout, then stderr, then stdout: in the order it was written.
            let order = try browser.script("""
                return [...document.querySelectorAll('#output span')].map((s) => s.classList.contains('out-stderr') ? 'e' : 'o')
                  .filter((k, i, all) => i === 0 || all[i - 1] !== k).join('');
                """) as? String
            #expect(order == "oeo")
            let whole = try browser.text("#output")
            #expect(whole.hasPrefix("line 1\nline 2\n") && whole.components(separatedBy: "line 7\n").count == 2, "each byte once")
            #expect(try browser.wait(until: "document.querySelector('#run-state').textContent.startsWith('✓ run 1 succeeded')"))
        }
    }

    @Test("an ended run: its whole output, stderr apart, markup as text; download raw saves its bytes")
    func endedRun() async throws {
        let gate = try FifoGate()
        let daemon = try Self.daemon(gate)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "ended").code == 0)
        try await Self.runPage(dashboard, 1) { browser in
            #expect(try browser.wait(until: "document.querySelector('#output-note').dataset.state === 'ended'"))
            #expect(try browser.text("#output-note") == "The whole output: \(Self.endedBytes) bytes.")
            let text = try browser.text("#output")
            #expect(text.contains("first out\n") && text.contains("<b>not bold</b> blue ok\n"), "\(text.debugDescription)")
            #expect(try browser.text("#output .out-stderr") == "an error line\n")
            #expect(try browser.text("#output .ansi-fg-4") == "blue")
            #expect(try browser.script("return document.querySelectorAll('#output b').length;") as? Int == 0)
            try browser.click("#output-raw")
            #expect(try browser.wait(until: "document.querySelector('#output-raw-note').textContent.startsWith('downloaded')"))
            #expect(try browser.text("#output-raw-note") == "downloaded \(Self.endedBytes) bytes")
            try browser.script("document.querySelector('#run-view h2:last-of-type').scrollIntoView();")
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-run-output.png")
        }
    }

    @Test("batond going away mid-run: the page says it is reconnecting, then resumes at the byte it had and shows the end, each line once")
    func resumesAfterDrop() async throws {
        let gate = try FifoGate()
        let flag = gate.directory + "/flag"
        // The run waits for a file, not the FIFO: its process outlives the batond killed under it,
        // and the file lets it end whatever became of it.
        let script = #"""
            i=1; while [ $i -le 50 ]; do echo "line $i"; i=$((i+1)); done
            while [ ! -e "$FLAG" ]; do sleep 0.02; done
            echo "after the flag"
            """#
        try script.write(toFile: gate.directory + "/resume.sh", atomically: true, encoding: .utf8)
        let config = """
            { actions: { resume: { exec: ["/bin/sh", "\(gate.directory)/resume.sh"], env: { FLAG: "\(flag)" }, survivesRestart: false } } }
            """
        let daemon = try Daemon(config: config)
        defer { FileManager.default.createFile(atPath: flag, contents: nil) }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "resume", "--detach").stdout == "1\n")
        try await Self.runPage(dashboard, 1) { browser in
            #expect(try browser.wait(until: "\(Self.box).textContent.endsWith('line 50\\n')"))
            daemon.crash()
            #expect(try browser.wait(until: "document.querySelector('#output-note').textContent.startsWith('reconnecting')"))
            let again = try Daemon(config: config, reusing: daemon)
            defer { again.stop() }
            // batond's recovery ends the run (interrupted: survivesRestart false); the page comes back and gets its end.
            #expect(try browser.wait(until: "document.querySelector('#output-note').dataset.state === 'ended'", seconds: 30))
            let text = try browser.text("#output")
            #expect(text.hasPrefix("line 1\nline 2\n") && text.hasSuffix("line 50\n"), "\(text.suffix(40).debugDescription)")
            #expect(text.components(separatedBy: "\n").count == 51, "each of the 50 lines once")
            #expect(try browser.text("#output-note") == "The whole output: \((1...50).map { "line \($0)\n" }.joined().utf8.count) bytes.")
        }
    }
}
