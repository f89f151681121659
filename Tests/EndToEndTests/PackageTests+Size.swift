import BatonCore
import Foundation
import Testing

extension PackageTests {
    /// Issue 28's bounds, in bytes: each binary as the package ships it, and the package.
    static let binaryLimit = 19_000_000, debLimit = 10_000_000

    @Test("""
        stripped as build-deb strips them, batond and baton are at most 19 MB each and the .deb at most 10 MB; \
        neither links ICU or FoundationInternationalization, statically or not
        """)
    func sizes() async throws {
        let directory = try await Self.releaseDirectory()
        let scratch = NSTemporaryDirectory() + "baton-sizes-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for binary in ["batond", "baton"] {
            let path = directory + "/" + binary
            let ldd = try await run("/usr/bin/ldd", [path])
            #expect(ldd.code == 0 && !ldd.stdout.lowercased().contains("icu") && !ldd.stdout.contains("Foundation"), "\(binary): \(ldd.stdout)")
            // Linked statically, ICU shows only in the symbols (and its data, most of the weight).
            let symbols = try await run("/bin/sh", ["-c", "nm '\(path)' | grep -c -E 'FoundationInternationalization|_FoundationICU|icudt[0-9]+_dat|ucal_open'"])
            #expect(symbols.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(binary) holds ICU or FoundationInternationalization")
            let stripped = scratch + "/" + binary
            try FileManager.default.copyItem(atPath: path, toPath: stripped)
            let strip = try await run("/usr/bin/strip", ["--strip-unneeded", "--remove-section=.comment", "--remove-section=.note", stripped])
            #expect(strip.code == 0, "\(strip.stderr)")
            let size = try #require(try FileManager.default.attributesOfItem(atPath: stripped)[.size] as? Int)
            #expect(size <= Self.binaryLimit, "\(binary) is \(size) bytes stripped")
        }
        let deb = try await Self.buildDeb()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: deb)[.size] as? Int)
        #expect(size <= Self.debLimit, "the .deb is \(size) bytes")
    }

    @Test("""
        the functions a start runs are laid out first, in packaging/startup-order.txt's order (Baton's \
        own, each in a section of its own, exactly so); most of the names listed are still in the binaries
        """)
    func startupOrder() async throws {
        let directory = try await Self.releaseDirectory()
        let listed = try String(contentsOfFile: Self.repository + "/packaging/startup-order.txt", encoding: .utf8)
            .split(separator: "\n").map(String.init)
        #expect(listed.count > 1_000, "the order lists \(listed.count) functions")
        var found = Set<String>()
        for binary in ["batond", "baton"] {
            let addresses = try await Self.functionAddresses(directory + "/" + binary)
            found.formUnion(listed.filter { addresses[$0] != nil })
            // Baton's own functions: their order in the binary is the file's (a section each).
            let ours = listed.filter { $0.range(of: #"^\$s[0-9]+(Baton|batond|baton)"#, options: .regularExpression) != nil }
                .compactMap { addresses[$0] }
            #expect(ours.count > 300, "\(binary): \(ours.count) of Baton's own functions listed")
            let outOfOrder = zip(ours, ours.dropFirst()).filter { $1 < $0 }.count
            #expect(outOfOrder == 0, "\(binary): \(outOfOrder) of \(ours.count) listed functions out of order: not linked with the order")
        }
        // Names that are gone are skipped by the linker; many gone means the file needs writing again.
        #expect(found.count * 10 >= listed.count * 9,
                "only \(found.count) of \(listed.count) listed functions are in batond or baton: run scripts/order-symbols")
    }

    /// Each function symbol's address (`nm`), the first one where a name repeats (local symbols).
    static func functionAddresses(_ path: String) async throws -> [String: UInt64] {
        let nm = try await run("/usr/bin/nm", ["--defined-only", path])
        #expect(nm.code == 0, "\(nm.stderr)")
        var addresses: [String: UInt64] = [:]
        for line in nm.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, ["t", "T", "w", "W"].contains(fields[1]), let address = UInt64(fields[0], radix: 16) else { continue }
            if addresses[String(fields[2])] == nil { addresses[String(fields[2])] = address }
        }
        return addresses
    }
}

/// Product modules use FoundationEssentials: Foundation brings ICU (about 45 MB a binary). Tests,
/// the benchmark and the build-time tools may import it.
@Suite("Sources: no product module imports Foundation", .offPool)
struct EssentialsImportTests {
    static let allowed: Set<String> = ["baton-bench", "EmbedAssets", "EmbedAssetsPlugin", "EmbedMigrations", "EmbedMigrationsPlugin"]
    static let forbidden: Set<String> = ["Foundation", "FoundationInternationalization", "FoundationNetworking", "FoundationXML"]

    /// The module an import line names (`import Foundation`, `@preconcurrency import struct Foundation.Date`), or nil.
    static func importedModule(_ line: Substring) -> String? {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        while let first = words.first, first.hasPrefix("@") || ["public", "package", "internal", "private", "fileprivate"].contains(first) {
            words = words.dropFirst()
        }
        guard words.first == "import" else { return nil }
        words = words.dropFirst()
        if let kind = words.first, ["struct", "class", "enum", "protocol", "typealias", "func", "var", "let"].contains(kind) { words = words.dropFirst() }
        return words.first.map { String($0.split(separator: ".").first ?? $0) }
    }

    @Test("an import line's module, whatever its attributes and kind", arguments: [
        ("import Foundation", "Foundation"), ("@preconcurrency import struct Foundation.Date", "Foundation"),
        ("@_exported public import FoundationNetworking", "FoundationNetworking"), ("import FoundationEssentials", "FoundationEssentials"),
        ("  import Glibc", "Glibc"), ("// import Foundation", nil), ("let important = 1", nil),
    ] as [(String, String?)])
    func parsing(line: String, module: String?) {
        #expect(Self.importedModule(line[...]) == module)
    }

    @Test("every Swift file under Sources, but the benchmark's and the build tools', imports no Foundation")
    func noFoundation() throws {
        let sources = PackageTests.repository + "/Sources"
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources).filter { !Self.allowed.contains($0) }
        var offenders: [String] = []
        var files = 0
        for module in modules {
            guard let walker = FileManager.default.enumerator(atPath: sources + "/" + module) else { continue }
            for case let file as String in walker where file.hasSuffix(".swift") {
                files += 1
                let text = try String(contentsOfFile: sources + "/" + module + "/" + file, encoding: .utf8)
                for line in text.split(separator: "\n") where Self.importedModule(line).map(Self.forbidden.contains) == true {
                    offenders.append("Sources/\(module)/\(file): \(line)")
                }
            }
        }
        #expect(files > 100, "the walk found the sources")
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }
}
