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

    /// The most locks Sources may make (issue 38): state one thread or loop owns is that owner's
    /// plain value, a result handed to another thread goes through a channel (`OneShot`, a join, a
    /// stream); a lock is for what several threads truly share.
    ///
    /// A lock is a `Locked`, a `Mutex`, or one of the locks under them (`ThreadLock`, `NSLock`,
    /// `NSRecursiveLock`, `pthread_mutex_init`), and all count, however made: by name, through a
    /// `typealias`, or `.init(…)` on a property or local typed as one (as far as a line scan sees;
    /// `Locked.swift` and `ThreadLock.swift`, which make the lock every `Locked` holds, aside).
    /// One exception: a `Mutex` that proves ownership to the compiler and is never waited for (one
    /// thread at a time takes it; it makes a value a `Sendable` class carries checked, where a bare
    /// `var` needed `@unchecked`). Such a one says so on the line that makes it, after
    /// `ownershipProof` and a reason, and its file takes it only with `withLockIfAvailable`, trapping
    /// with a `preconditionFailure` where it is held (`SerialWorker`'s `Owned`, `WriterSlot`), so
    /// that the claim is checked when it runs. `lockedCount` names every proof in what it reports
    /// and allows at most `maxProofs`: marking a shared lock is a change of this file as well as a
    /// visible comment, never a silent way past the count. A `Locked` is never one.
    /// 21 since session 34: a fleet feed's mark (`FleetCompany.published`), written by the feed's
    /// thread and read by each committer's thread as it sends its COMMIT, a list no atomic holds.
    static let maxLocked = 21
    static let ownershipProof = "// ownership proof: "
    static let maxProofs = 2
    /// The lock types that are not a `Mutex` (never an ownership proof).
    static let lockTypes = ["Locked", "ThreadLock", "NSLock", "NSRecursiveLock"]

    /// The capture groups of each match of `pattern` in `text`, comments and strings left out.
    static func captures(_ pattern: String, in text: String) -> [[String]] {
        let code = EffectsUnderLockTests.blankCommentsAndStrings(text)
        return try! NSRegularExpression(pattern: pattern).matches(in: code, range: NSRange(code.startIndex..., in: code)).map { match in
            (1..<match.numberOfRanges).map { Range(match.range(at: $0), in: code).map { String(code[$0]) } ?? "" }
        }
    }

    /// The other names `text` gives a lock type (`typealias Guard = Mutex<S>`), each with whether it is a `Mutex`.
    static func lockAliases(in text: String) -> [String: Bool] {
        var aliases: [String: Bool] = [:]
        for match in captures(#"(?<![\w.])typealias\s+(\w+)(?:<[^\n=]*>)?\s*=\s*(?:Synchronization\.)?(\w+)"#, in: text) {
            if match[1] == "Mutex" || lockTypes.contains(match[1]) { aliases[match[0]] = match[1] == "Mutex" }
        }
        return aliases
    }

    /// The locks made in `text`, comments and strings left out: `Locked(…)`, `Mutex<…>(…)`,
    /// `ThreadLock()`, `NSLock()`, `NSRecursiveLock()` (`.init` or a `Synchronization.` prefix too),
    /// `pthread_mutex_init(…)`, a lock type's `aliases` (those `text` declares when nil) made by
    /// name, and `.init(…)` given to a property or local declared with a lock type; among them the
    /// `Mutex`es on a line marked an ownership proof (with a reason), counted apart.
    static func lockConstructions(in text: String, aliases: [String: Bool]? = nil) -> (locks: Int, proofs: Int) {
        let aliases = aliases ?? lockAliases(in: text)
        let mutexes = ["Mutex"] + aliases.filter(\.value).keys.sorted(), others = lockTypes + aliases.filter { !$0.value }.keys.sorted()
        func made(_ names: [String]) -> String {
            #"(?<![\w.])(?:Synchronization\.)?(?:"# + names.joined(separator: "|") + #")(?:<[^\n]*?>)?(?:\.init)?\("#
        }
        // Only the lines that name a lock or make something by `.init` can make one (a scan per line is slow).
        let names = mutexes + others + ["pthread_mutex_init"]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { line in names.contains(where: line.contains) || line.contains(".init(") }
        // Declared with a lock type (and made, perhaps on another line, by `.init`): whether a `Mutex`.
        var typed: [String: Bool] = [:]
        for line in lines where names.contains(where: line.contains) {
            let declared = #"(?<![\w.])(?:let|var)\s+(\w+)\s*:\s*(?:Synchronization\.)?("# + (mutexes + others).joined(separator: "|") + #")\b"#
            for match in captures(declared, in: line) { typed[match[0]] = mutexes.contains(match[1]) }
        }
        var (locks, proofs) = (0, 0)
        for line in lines {
            var (other, mutex) = (matches(made(others), in: line) + matches(#"(?<![\w.])pthread_mutex_init\("#, in: line), matches(made(mutexes), in: line))
            for (name, isMutex) in typed where matches(#"(?<![\w.])(?:(?:let|var)\s+|self\.)?"# + name + #"\s*(?::[^=\n]*)?=\s*\.init\("#, in: line) > 0 {
                if isMutex { mutex += 1 } else { other += 1 }
            }
            let marked = line.range(of: ownershipProof).map { !line[$0.upperBound...].trimmingCharacters(in: .whitespaces).isEmpty } ?? false
            locks += other + (marked ? 0 : mutex)
            proofs += marked ? mutex : 0
        }
        return (locks, proofs)
    }

    @Test("Sources make at most 20 locks, Locked, Mutex or the locks under them (Locked.swift and ThreadLock.swift aside), and at most 2 Mutexes that only prove ownership, each marked and trapping where held")
    func lockedCount() throws {
        let files = try Self.swiftFiles(under: Self.sources).filter { !["BatonRuntime/Locked.swift", "BatonRuntime/ThreadLock.swift"].contains($0.0) }
        let aliases = files.reduce(into: [String: Bool]()) { $0.merge(Self.lockAliases(in: $1.1)) { first, _ in first } }
        var (found, proofs): ([String], [String]) = ([], [])
        var (total, proofCount) = (0, 0)
        for (path, text) in files {
            let count = Self.lockConstructions(in: text, aliases: aliases)
            if count.locks > 0 { found.append("\(path): \(count.locks)") }
            if count.proofs > 0 {
                proofs.append("\(path): \(count.proofs)")
                #expect(text.contains("withLockIfAvailable") && text.contains("preconditionFailure("),
                        "Sources/\(path) marks an ownership proof: take it with withLockIfAvailable, trapping (preconditionFailure) where it is held")
            }
            total += count.locks
            proofCount += count.proofs
        }
        #expect(total <= Self.maxLocked, "\(total) locks made in Sources (at most \(Self.maxLocked)): \(found.sorted()); ownership proofs not counted: \(proofs.sorted())")
        #expect(proofCount <= Self.maxProofs, "\(proofCount) Mutexes marked ownership proofs (at most \(Self.maxProofs)): \(proofs.sorted())")
        #expect(total > 0, "found no lock at all under \(Self.sources.path)")
    }

    @Test("the lock count reads every form of construction (Locked, Mutex, the locks under them, an alias, .init on a typed name) and no comment or type; a Mutex marked an ownership proof with a reason is counted apart")
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
            let i = Mutex(0), j = Mutex<[Int]>([]), k = Synchronization.Mutex<Int>.init(0)
            private let l: Mutex<Int>
            let m = Mutex(0) // ownership proof: one thread takes it
            let n = Mutex(0) // ownership proof:
            let o = Locked(0) // ownership proof: a Locked is never one
            let p = ThreadLock(), q = NSLock(), r = NSRecursiveLock.init()
            pthread_mutex_init(&raw, nil)
            let s: Mutex<Int> = .init(0)
            f = .init(JournalGate())
            self.l = .init(0) // ownership proof: made once, taken by one thread
            typealias Guard = Mutex<Int>
            let t = Guard(0)
            let u: ThreadLock
            u = .init()
            let v: Int = .init(0), w = ThreadLockFree()
            """
        let found = Self.lockConstructions(in: text)
        #expect(found.locks == 18 && found.proofs == 2, "\(found)")
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

    /// The top-level types in `text` that hold a `@Test`, each with its `@Suite` attribute (nil:
    /// none, an extension or an implicit suite), comments and strings left out; and the `@Test`
    /// functions outside any type.
    static func testHolders(in text: String) -> (types: [(name: String, suite: String?)], free: Int) {
        let declaration = try! NSRegularExpression(pattern: #"^(?:@Suite(?:\(.*\))?\s+)?(?:(?:private|fileprivate|internal|public)\s+)?(?:final\s+)?(?:class|struct|enum|extension|actor)\s+(\w+)"#)
        var (types, free): ([(name: String, suite: String?, tests: Int)], Int) = ([], 0)
        var attribute: String?
        for line in EffectsUnderLockTests.blankCommentsAndStrings(text).split(separator: "\n").map(String.init) {
            if line.hasPrefix("@Suite") { attribute = "" }
            if attribute != nil { attribute! += line + "\n" }
            if let match = declaration.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) {
                types.append((String(line[Range(match.range(at: 1), in: line)!]), attribute, 0))
                attribute = nil
            }
            if line.hasPrefix("@Test") {
                free += 1
            } else if line.contains("@Test"), !types.isEmpty {
                types[types.count - 1].tests += 1
            }
        }
        return (types.filter { $0.tests > 0 }.map { ($0.name, $0.suite) }, free)
    }

    @Test("every end-to-end test is in a suite that runs it off the cooperative pool (.offPool)")
    func endToEndSuitesOffPool() throws {
        let root = Self.sources.deletingLastPathComponent().appendingPathComponent("Tests/EndToEndTests")
        let files = try Self.swiftFiles(under: root).map { Self.testHolders(in: $0.text) }
        let types = files.flatMap(\.types)
        let offPool = Set(types.filter { $0.suite?.contains(".offPool") == true }.map(\.name))
        let onThePool = types.filter { !offPool.contains($0.name) }.map(\.name)
        #expect(onThePool.isEmpty, "tests whose suite does not name .offPool (their blocking waits would hold the pool): \(Set(onThePool).sorted())")
        #expect(files.map(\.free).reduce(0, +) == 0, "a @Test outside any suite runs on the pool")
        #expect(offPool.count > 100, "found only \(offPool.count) suites with .offPool under \(root.path)")
        let sample = """
            @Suite("a", .serialized, .offPool)
            struct A { @Test func a() {} }
            extension A { @Test("x (y)") func b() {} }
            @Suite("b", .serialized,
                   .enabled(if: true), .offPool)
            struct B {
                @Test func c() {}
            }
            @Suite(.offPool) struct C { @Test func d() {} }
            @Suite("d") struct D { @Test func e() {} }
            struct E { @Test func f() {} }
            final class F { func g() {} } // @Test
            @Test func h() {}
            """
        let found = Self.testHolders(in: sample)
        #expect(found.types.map(\.name) == ["A", "A", "B", "C", "D", "E"] && found.free == 1)
        #expect(found.types.map { $0.suite?.contains(".offPool") } == [true, nil, true, true, false, nil])
    }

    @Test("no test under .offPool takes Swift Testing's .timeLimit, which counts the wait for a slot: .slotTimeLimit counts from the slot")
    func limitsFromTheSlot() throws {
        let tests = Self.sources.deletingLastPathComponent().appendingPathComponent("Tests")
        let files = try Self.swiftFiles(under: tests).filter { Self.matches(#"\.offPool\b"#, in: $0.text) > 0 }
        let found = files.filter { Self.matches(#"\.timeLimit\("#, in: $0.text) > 0 }.map(\.path)
        #expect(found.isEmpty, ".timeLimit in files of .offPool suites (use .slotTimeLimit): \(found)")
        #expect(files.count > 100 && files.contains { $0.text.contains(".slotTimeLimit(") }, "found \(files.count) files naming .offPool under \(tests.path)")
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
