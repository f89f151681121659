import Foundation
import Testing

/// A headless Chromium driven through Debian's chromedriver by the W3C WebDriver protocol (JSON over
/// HTTP on loopback): enough to open the dashboard, press, read and screenshot. The browser gets
/// flags that keep it from talking to anything but the page (no updates, sync or metrics).
final class WebDriver: @unchecked Sendable {
    static let chromium = "/usr/bin/chromium"
    static let chromedriver = "/usr/bin/chromedriver"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: chromium) && FileManager.default.isExecutableFile(atPath: chromedriver) }

    private let driver: Spawned
    private let port: UInt16
    private var session = ""

    init(width: Int = 1100, height: Int = 900, dark: Bool = false) throws {
        port = try Self.freePort()
        driver = try Spawned([Self.chromedriver, "--port=\(port)", "--allowed-ips=127.0.0.1"])
        // chromedriver answers /status once it listens.
        guard Eventually.held(within: 30, { (try? call("GET", "/status")) != nil }) else {
            throw DashboardError("chromedriver did not answer /status within 30 s")
        }
        let profile = NSTemporaryDirectory() + "baton-chromium-" + UUID().uuidString
        let arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=\(width),\(height)",
                         "--user-data-dir=\(profile)", "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
                         "--metrics-recording-only", "--disable-features=Translate,OptimizationHints,MediaRouter",
                         "--force-color-profile=srgb", "--hide-scrollbars"]
            + (dark ? ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] : [])
        let capabilities: [String: Any] = ["capabilities": ["alwaysMatch": [
            "browserName": "chrome", "goog:chromeOptions": ["binary": Self.chromium, "args": arguments]]]]
        let answer = try call("POST", "/session", capabilities)
        guard let value = answer as? [String: Any], let id = value["sessionId"] as? String else {
            throw DashboardError("no WebDriver session: \(String(describing: answer))")
        }
        session = id
        _ = try call("POST", "/session/\(session)/timeouts", ["script": 30_000])
    }

    deinit { quit() }

    func quit() {
        if !session.isEmpty { _ = try? call("DELETE", "/session/\(session)"); session = "" }
        // chromedriver's own way out; then the signal, for one that does not answer.
        _ = try? call("GET", "/shutdown")
        driver.stop()
    }

    // MARK: What a test does

    func open(_ url: String) throws { _ = try call("POST", "/session/\(session)/url", ["url": url]) }

    /// Runs a script in the page and returns its value.
    @discardableResult
    func script(_ body: String, _ arguments: [Any] = []) throws -> Any? {
        try call("POST", "/session/\(session)/execute/sync", ["script": body, "args": arguments])
    }

    /// Waits until the JavaScript expression is true in the page: checked at once and on every
    /// change of the page (a MutationObserver), not on a timer; false after `seconds`.
    func wait(until expression: String, seconds: Int = 20) throws -> Bool {
        let body = """
            const done = arguments[arguments.length - 1];
            const check = () => { try { return !!(\(expression)); } catch (error) { return false; } };
            if (check()) { done(true); return; }
            const observer = new MutationObserver(() => { if (check()) { observer.disconnect(); clearTimeout(timer); done(true); } });
            observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
            const timer = setTimeout(() => { observer.disconnect(); done(check()); }, \(seconds * 1_000));
            """
        return try call("POST", "/session/\(session)/execute/async", ["script": body, "args": []]) as? Bool ?? false
    }

    /// Clicks the element the selector finds, as a user would (scrolled into view, real events).
    func click(_ selector: String) throws {
        _ = try call("POST", "/session/\(session)/element/\(element(selector))/click", [String: Any]())
    }

    /// Types into the element the selector finds.
    func type(_ selector: String, _ text: String) throws {
        let id = try element(selector)
        _ = try call("POST", "/session/\(session)/element/\(id)/clear", [String: Any]())
        _ = try call("POST", "/session/\(session)/element/\(id)/value", ["text": text])
    }

    /// Sends keys to whatever has the focus (Tab, Enter: "\u{E004}", "\u{E007}").
    func keys(_ text: String) throws {
        let actions: [[String: Any]] = text.unicodeScalars.flatMap { scalar -> [[String: Any]] in
            [["type": "keyDown", "value": String(scalar)], ["type": "keyUp", "value": String(scalar)]]
        }
        _ = try call("POST", "/session/\(session)/actions", ["actions": [["type": "key", "id": "keyboard", "actions": actions]]])
    }

    func text(_ selector: String) throws -> String {
        try script("const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", [selector]) as? String ?? ""
    }

    func screenshot(to path: String) throws {
        guard let base64 = try call("GET", "/session/\(session)/screenshot") as? String, let data = Data(base64Encoded: base64) else {
            throw DashboardError("no screenshot")
        }
        try data.write(to: URL(fileURLWithPath: path))
    }

    func setWindow(width: Int, height: Int) throws {
        _ = try call("POST", "/session/\(session)/window/rect", ["width": width, "height": height])
    }

    private func element(_ selector: String) throws -> String {
        let found = try call("POST", "/session/\(session)/element", ["using": "css selector", "value": selector])
        guard let object = found as? [String: Any], let id = object.values.first as? String else { throw DashboardError("no element \(selector)") }
        return id
    }

    // MARK: The protocol

    /// One WebDriver command; returns its `value`, or throws its error.
    private func call(_ method: String, _ path: String, _ body: Any? = nil) throws -> Any? {
        let payload = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        let probe = try HTTPProbe(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if body != nil { head += "Content-Type: application/json; charset=utf-8\r\nContent-Length: \(payload.count)\r\n" }
        probe.send(head + "\r\n" + String(decoding: payload, as: UTF8.self))
        let answer = try probe.answer(timeout: .seconds(60))
        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8), options: [.fragmentsAllowed]) as? [String: Any]
        let value = object?["value"]
        if answer.status != 200 {
            let error = (value as? [String: Any])?["message"] as? String ?? answer.body
            throw DashboardError("WebDriver \(method) \(path): \(answer.status) \(error.prefix(300))")
        }
        return value is NSNull ? nil : value
    }

    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw DashboardError("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }
}
