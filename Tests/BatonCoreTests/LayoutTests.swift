import Foundation
import Testing

/// The module layout of `../shared/design.md` and `docs/architecture.md`, checked on the sources:
/// dependencies point inward, and the engine imports nothing that could make it impure. A file
/// that adds an import breaking a rule fails here, naming the file and the import.
@Suite("Layout: the modules import what the design allows")
struct LayoutTests {
    /// The package's `Sources/`, found from this file.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// A module and the imports it may not have (`only`: the only ones it may have).
    struct Rule: Sendable, CustomTestStringConvertible {
        var module: String
        var only: Set<String>?
        var never: Set<String> = []
        var testDescription: String { module }
    }

    static let rules: [Rule] = [
        // The engine: the standard library, and FoundationEssentials for a value type's Codable bytes.
        Rule(module: "BatonEngine", only: ["FoundationEssentials"]),
        // The wire codec: the engine's values, nothing of the runtime (no clock, no libc).
        Rule(module: "BatonWire", only: ["BatonEngine", "FoundationEssentials"]),
        // The runtime (loop, workers, locks, threads, clocks): the engine's values and the system, nothing above.
        Rule(module: "BatonRuntime", only: ["BatonEngine", "CBatonSystem", "Glibc", "FoundationEssentials", "Dispatch", "Synchronization"]),
        // Processes (spawn, attempts, cgroups, /proc, users): the runtime below them, no conductor, no wire.
        Rule(module: "BatonProcess", only: ["BatonEngine", "BatonRuntime", "CBatonSystem", "Glibc", "FoundationEssentials", "Dispatch"]),
        // Metrics: counting and exposition; nothing of processes, the wire or the conductor.
        Rule(module: "BatonMetrics", only: ["BatonEngine", "BatonRuntime", "Glibc", "FoundationEssentials"]),
        Rule(module: "BatonCore", only: nil, never: ["BatonStore", "BatonFleet", "BatonIPC", "BatonService", "BatonHooks", "BatonClient"]),
        Rule(module: "BatonStore", only: nil, never: ["BatonIPC", "BatonService", "BatonFleet", "BatonHooks", "BatonClient", "CLibPQ"]),
        Rule(module: "BatonFleet", only: nil, never: ["BatonIPC", "BatonService", "BatonStore", "BatonHooks", "BatonClient", "CSQLite"]),
        Rule(module: "BatonIPC", only: nil, never: ["BatonStore", "BatonFleet", "BatonService", "CSQLite", "CLibPQ"]),
        // The transport calls the service through `RequestHandler`, defined below both (BatonCore).
        Rule(module: "BatonService", only: nil, never: ["BatonIPC", "BatonStore", "BatonFleet", "CSQLite", "CLibPQ", "CBatonSystem"]),
        Rule(module: "BatonClient", only: nil, never: ["BatonStore", "BatonFleet", "BatonService", "CSQLite", "CLibPQ"]),
        Rule(module: "BatonHooks", only: nil, never: ["BatonStore", "BatonFleet", "BatonService", "CSQLite", "CLibPQ"]),
    ]

    /// Each Swift file under `directory` (recursively) with the modules it imports (`import X`,
    /// `@_exported import X`, `import struct X.Y`).
    static func imports(in directory: URL) throws -> [(file: String, module: String)] {
        guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        var found: [(String, String)] = []
        for case let path as String in walker where path.hasSuffix(".swift") {
            let text = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let module = importedModule(String(line)) { found.append((directory.lastPathComponent + "/" + path, module)) }
            }
        }
        return found
    }

    /// The module a line imports, or nil.
    static func importedModule(_ line: String) -> String? {
        var words = line.split(separator: " ").map(String.init)
        while let first = words.first, first.hasPrefix("@") { words.removeFirst() }
        guard words.count >= 2, words[0] == "import" else { return nil }
        let kinds: Set<String> = ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"]
        let target = words.count >= 3 && kinds.contains(words[1]) ? words[2] : words[1]
        return String(target.split(separator: ".")[0])
    }

    @Test("each module imports only what the layout allows", arguments: rules)
    func rule(_ rule: Rule) throws {
        let imports = try Self.imports(in: Self.sources.appendingPathComponent(rule.module))
        #expect(!imports.isEmpty || rule.only != nil, "no sources found for \(rule.module) under \(Self.sources.path)")
        for (file, module) in imports {
            if let only = rule.only { #expect(only.contains(module), "\(file) imports \(module): \(rule.module) may import only \(only.sorted())") }
            #expect(!rule.never.contains(module), "\(file) imports \(module), which \(rule.module) must not")
        }
    }

    @Test("the rule reads every form of import, so that a new one cannot slip past it")
    func readsEveryForm() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("baton-layout-\(UUID().uuidString)")
        let module = directory.appendingPathComponent("Probe")
        try FileManager.default.createDirectory(at: module, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "import Glibc\n@_exported import Dispatch\nimport struct CBatonSystem.Thing\n@testable import BatonStore\nlet x = 1 // import Not\n"
            .write(to: module.appendingPathComponent("A.swift"), atomically: true, encoding: .utf8)
        let found = try Self.imports(in: module)
        #expect(found.map(\.module) == ["Glibc", "Dispatch", "CBatonSystem", "BatonStore"])
    }

    /// The longest a source file may be: a few screens.
    static let maxLines = 350

    /// Every Swift file under `root`, by its path there, with its text.
    static func swiftFiles(under root: URL) throws -> [(path: String, text: String)] {
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { throw CocoaError(.fileNoSuchFile) }
        var files: [(path: String, text: String)] = []
        for case let path as String in walker where path.hasSuffix(".swift") {
            files.append((path, try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)))
        }
        return files
    }

    /// The matches of `pattern` in `text`, comments and strings left out.
    static func matches(_ pattern: String, in text: String) -> Int {
        let code = EffectsUnderLockTests.blankCommentsAndStrings(text)
        return try! NSRegularExpression(pattern: pattern).numberOfMatches(in: code, range: NSRange(code.startIndex..., in: code))
    }

    @Test("every file under Sources is shorter than a few screens (350 lines)")
    func fileLengths() throws {
        var checked = 0
        for (path, text) in try Self.swiftFiles(under: Self.sources) {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
            #expect(lines < Self.maxLines, "Sources/\(path) is \(lines) lines: split it (at most \(Self.maxLines - 1))")
            checked += 1
        }
        #expect(checked > 100, "found only \(checked) Swift files under \(Self.sources.path)")
    }

    /// The most `Locked` values Sources may make (issue 38): state one thread or loop owns is that
    /// owner's plain value, a result handed to another thread goes through a channel (`OneShot`,
    /// a join, a stream); a lock is for what several threads truly share.
    static let maxLocked = 20

    /// The `Locked(…)` and `Locked<…>(…)` constructions in `text`, comments and strings left out.
    static func lockedConstructions(in text: String) -> Int {
        matches(#"(?<![\w.])Locked(<[^\n]*?>)?\("#, in: text)
    }

    @Test("Sources make at most 20 Locked values (Locked.swift itself aside)")
    func lockedCount() throws {
        var found: [String] = []
        for (path, text) in try Self.swiftFiles(under: Self.sources) where path != "BatonRuntime/Locked.swift" {
            let count = Self.lockedConstructions(in: text)
            if count > 0 { found.append("\(path): \(count)") }
        }
        let total = found.reduce(0) { $0 + Int($1.split(separator: " ").last!)! }
        #expect(total <= Self.maxLocked, "\(total) Locked values made in Sources (at most \(Self.maxLocked)): \(found.sorted())")
        #expect(total > 0, "found no Locked value at all under \(Self.sources.path)")
    }

    @Test("the Locked count reads every form of construction, and no comment or type")
    func lockedCountForms() {
        let text = """
            let a = Locked(0), b = Locked<[Int]>([])
            private let c = Locked<(id: Int64?, cancelled: Bool)>((nil, false))
            let d = Locked<Result<T, any Error>?>(nil)
            self.e = Locked(gate)
            private let f: Locked<JournalGate>
            // let g = Locked(1)
            extension Locked where Value == Int {}
            let h = ThreadLocked(0)
            """
        #expect(Self.lockedConstructions(in: text) == 5)
    }

    /// Reaches into a storage held behind one reference (`RunSnapshot`'s, `Action`'s, `Trigger`'s,
    /// `Request`'s) in `text`: its `fields` are a `let`, replaced by a new storage only through the
    /// value's setters (issue 39), and nothing else is to depend on how the value keeps them.
    static func snapshotStorageWrites(in text: String) -> Int {
        matches(#"\bstorage\s*\.\s*fields\b|\.storage\s*=[^=]"#, in: text)
    }

    /// The files of the values held behind one storage: only these reach a storage (which storage each
    /// reaches is not checked: an owner file is exempt from the whole pattern).
    static let storageOwners = [
        "BatonEngine/Model/RunSnapshot", "BatonEngine/Model/Action.swift", "BatonEngine/Model/Action+Properties.swift",
        "BatonEngine/Model/Action+Storage.swift", "BatonEngine/Engine/Trigger.swift", "BatonWire/Request.swift",
        "BatonWire/Request+Fields.swift",
    ]

    @Test("only the files of the values held behind one storage (RunSnapshot, Action, Trigger, Request) reach a storage's fields or replace one")
    func snapshotStorage() throws {
        let tests = Self.sources.deletingLastPathComponent().appendingPathComponent("Tests")
        var found: [String] = []
        for root in [Self.sources, tests] {
            for (path, text) in try Self.swiftFiles(under: root)
            where !Self.storageOwners.contains(where: path.hasPrefix) && path != "BatonCoreTests/LayoutTests.swift" {
                if Self.snapshotStorageWrites(in: text) > 0 { found.append(path) }
            }
        }
        #expect(found.isEmpty, "a value's storage reached outside its own files: \(found)")
        #expect(Self.snapshotStorageWrites(in: "run.storage.fields.seq = 1\nrun.storage = other\nlet same = a.storage === b.storage\nvar storage = sockaddr_storage()\n// storage.fields") == 2)
    }

    /// `Eventually` wrapped in `#expect`/`#require` (it records its own issue: that reported twice).
    static func wrappedWaits(in text: String) -> Int {
        matches(#"#(expect|require)\((try\s+|await\s+)*Eventually\."#, in: text)
    }

    @Test("no test wraps Eventually in #expect or #require: a failed wait is one report")
    func waitsReportOnce() throws {
        let tests = Self.sources.deletingLastPathComponent().appendingPathComponent("Tests")
        let found = try Self.swiftFiles(under: tests).filter { Self.wrappedWaits(in: $0.text) > 0 }.map(\.path)
        #expect(found.isEmpty, "Eventually wrapped in #expect/#require (use guard … else { return }): \(found)")
        #expect(Self.wrappedWaits(in: "try #require(try Eventually.until(\"x\") { true })\n#expect(await Eventually.untilAwaited(\"y\") { true })\nguard Eventually.until(\"z\", { true }) else { return }") == 2)
    }
}
