import BatonCore
import Foundation
import Testing


@Suite("Single-flight keys")
struct SingleFlightKeyTests {
    static let kp = Action(name: "kp", params: ["a": ParamSpec(), "b": ParamSpec()], keyParams: ["a", "b"])

    @Test("the key of each param set, escaped where a value needs it", arguments: [
        (["a": "x", "b": "y"], "kp a=x b=y"),
        (["a": "prod-1.2_x", "b": "/srv/app:8080"], "kp a=prod-1.2_x b=/srv/app:8080"),
        // Issue 21: these two made the same key, `kp a=x b=y b=z`.
        (["a": "x b=y", "b": "z"], "kp a=x%20b%3Dy b=z"),
        (["a": "x", "b": "y b=z"], "kp a=x b=y%20b%3Dz"),
        (["a": "100%", "b": "%20"], "kp a=100%25 b=%2520"),
        (["a": "", "b": "\"quoted\" 'too'"], "kp a= b=\"quoted\"%20'too'"),
        (["a": "tab\there", "b": "\u{1B}]0;x\u{7}"], "kp a=tab%09here b=%1B]0;x%07"),
        (["a": "\u{7F}", "b": "\u{85}"], "kp a=%7F b=%C2%85"),
        (["a": "café", "b": "日本 語"], "kp a=café b=日本%20語"),
        // Not in NFC: the same text as "café" to Swift, other bytes to the process.
        (["a": "cafe\u{301}", "b": "\u{212B}"], "kp a=cafe%CC%81 b=%E2%84%AB"),
        // A leading combining mark would compose with the `=` before it (`=` + U+0338 is `≠`).
        (["a": "\u{338}x", "b": "≠"], "kp a=%CC%B8x b=≠"),
        // Nor after an escape: `%09` + U+0301 would end in `Á`. After a letter it stays (NFC has no x́).
        (["a": "x\u{301}", "b": "\t\u{301}\u{301}y"], "kp a=x\u{301} b=%09%CC%81%CC%81y"),
        (["a": "x"], "kp a=x b"),
    ])
    func examples(params: [String: String], key: String) {
        #expect(Array(Self.kp.key(for: params).utf8) == Array(key.utf8))
    }

    @Test("an action without key params has its name as its key")
    func nameOnly() {
        #expect(Action(name: "deploy.web-1", params: ["env": ParamSpec()]).key(for: ["env": "a b"]) == "deploy.web-1")
    }

    /// Pieces that break naive keys: separators, escapes, quotes, controls, and texts that are
    /// canonically equivalent (equal as Swift strings) but different bytes.
    static let pieces = ["a", "b", "x", " ", "=", "%", "%2", "%20", "%3D", "\"", "'", "\\", "\n", "\t", "\r", "\u{1B}", "\u{7F}",
                         "\u{85}", "é", "e\u{301}", "\u{301}", "\u{338}", "≠", "Å", "A\u{30A}", "\u{212B}", "한", "\u{1112}\u{1161}\u{11AB}",
                         "🙂", "a=b", " b=", "日本"]

    static func randomValue(_ generator: inout SplitMix) -> String? {
        if Int.random(in: 0..<8, using: &generator) == 0 { return nil }
        return (0..<Int.random(in: 0...4, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }

    @Test("distinct params never share a key: 20,000 random param sets, compared as bytes", arguments: [1, 2, 3] as [UInt64])
    func injective(seed: UInt64) {
        var generator = SplitMix(seed: seed)
        let action = Action(name: "kp", keyParams: ["a", "b", "c"])
        // Keys compared as Swift strings, as the engine's tables compare them; params as bytes,
        // as the process receives them.
        var seen: [String: [[UInt8]?]] = [:]
        var collisions: [String] = []
        for _ in 0..<20_000 {
            var params: [String: String] = [:]
            for name in action.keyParams { params[name] = Self.randomValue(&generator) }
            let bytes = action.keyParams.map { params[$0].map { Array($0.utf8) } }
            let key = action.key(for: params)
            if let earlier = seen[key], earlier != bytes, collisions.count < 5 {
                collisions.append("\(earlier) and \(bytes) share \(key.debugDescription)")
            }
            seen[key] = bytes
        }
        #expect(collisions.isEmpty, "\(collisions)")
        #expect(seen.count > 15_000, "the generator made enough different param sets")
    }

    @Test("a key parses back to its action and each param's bytes, and is one NFC line", arguments: [4, 5] as [UInt64])
    func roundTrip(seed: UInt64) throws {
        var generator = SplitMix(seed: seed)
        let names = ["a", "b_2", "Zz"]
        for _ in 0..<5_000 {
            var params: [String: String] = [:]
            for name in names { params[name] = Self.randomValue(&generator) }
            let key = SingleFlightKey.make(action: "kp", keyParams: names, params: params)
            let parsed = try #require(SingleFlightKey.parse(key), "\(key.debugDescription)")
            #expect(parsed.action == "kp")
            #expect(parsed.params.map(\.name) == names)
            #expect(parsed.params.map { $0.value.map { Array($0.utf8) } } == names.map { params[$0].map { Array($0.utf8) } })
            #expect(key.utf8.elementsEqual(key.precomposedStringWithCanonicalMapping.utf8), "\(key.debugDescription)")
            #expect(!key.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(key.debugDescription)")
        }
    }

    @Test("values without a space, `=`, `%`, control or unstable character keep the key they always had")
    func plainValuesUnchanged() {
        var generator = SplitMix(seed: 6)
        let plain = Array("abcXYZ019-_./:@,+~\"'!#$&*()[]{}<>?;|^`é日🙂")
        for _ in 0..<2_000 {
            let a = String((0..<Int.random(in: 0...12, using: &generator)).map { _ in plain.randomElement(using: &generator)! })
            let b = String((0..<Int.random(in: 0...12, using: &generator)).map { _ in plain.randomElement(using: &generator)! })
            #expect(Self.kp.key(for: ["a": a, "b": b]) == "kp a=\(a) b=\(b)")
        }
    }

    @Test("texts that are not keys do not parse", arguments: ["kp a=%2", "kp a=%zz", "kp a=%2f", "kp a=%FF", "kp =x", "kp  a=x", "%"])
    func notKeys(text: String) {
        #expect(SingleFlightKey.parse(text) == nil)
    }
}

@Suite("Single-flight keys stored in the old form")
struct LegacyKeyTests {
    @Test("an old key is read with its run's params and written escaped", arguments: [
        ("kp a=x b=y b=z", ["a": "x b=y", "b": "z"], "kp a=x%20b%3Dy b=z"),
        ("kp a=x b=y b=z", ["a": "x", "b": "y b=z"], "kp a=x b=y%20b%3Dz"),
        // Only the key params, in the key's order, whatever else the run had.
        ("kp b=1 2 a=%", ["a": "%", "b": "1 2", "note": "a b"], "kp b=1%202 a=%25"),
        ("kp a= b=z", ["b": "z"], "kp a b=z"),
        ("kp a=\t", ["a": "\t"], "kp a=%09"),
    ])
    func rewritten(old: String, params: [String: String], new: String) {
        #expect(SingleFlightKey.rewriting(legacy: old, action: "kp", params: params) == new)
    }

    @Test("a key already in today's form, or not of this run, is left alone", arguments: [
        ("kp a=x b=y", ["a": "x", "b": "y"]),
        ("kp", ["a": "x y"]),
        ("kp a=x", ["a": "y"]),
        ("kp a=x y", ["a": "x"]),
        ("other a=x y", ["a": "x y"]),
        ("", ["a": "x y"]),
        ("kpa=x y", ["a": "x y"]),
    ])
    func unchanged(old: String, params: [String: String]) {
        #expect(SingleFlightKey.rewriting(legacy: old, action: "kp", params: params) == nil)
    }

    @Test("every old key of random params becomes the key the params make today", arguments: [7, 8] as [UInt64])
    func agreesWithMake(seed: UInt64) {
        var generator = SplitMix(seed: seed)
        let names = ["a", "b", "c"]
        for _ in 0..<5_000 {
            var params: [String: String] = [:]
            for name in names { params[name] = SingleFlightKeyTests.randomValue(&generator) }
            let keyParams = Array(names.shuffled(using: &generator).prefix(Int.random(in: 0...3, using: &generator)))
            let old = keyParams.isEmpty ? "kp" : (["kp"] + keyParams.map { "\($0)=\(params[$0] ?? "")" }).joined(separator: " ")
            let new = SingleFlightKey.make(action: "kp", keyParams: keyParams, params: params)
            let rewritten = SingleFlightKey.rewriting(legacy: old, action: "kp", params: params)
            #expect(Array((rewritten ?? old).utf8) == Array(new.utf8), "\(old.debugDescription) for \(params)")
            #expect((rewritten == nil) == old.utf8.elementsEqual(new.utf8))
        }
    }
}
