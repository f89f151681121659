import BatonCore
import Testing

@Suite("Durations, params and progress")
struct TextTests {
    @Test("durations parse", arguments: [("30s", 30_000_000), ("500ms", 500_000), ("1.5s", 1_500_000), ("5m", 300_000_000),
                                         ("1h30m", 5_400_000_000), ("7d", 604_800_000_000), (" 2h ", 7_200_000_000)])
    func parse(text: String, micros: Int64) {
        #expect(DurationText.parse(text)?.microseconds == micros)
    }

    @Test("bad durations do not parse", arguments: ["", "s", "10", "5x", "-3s", "1h-", "nan s", "1e400s"])
    func reject(text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test("the extremes format without overflow (found by the durations fuzzer)")
    func extremes() {
        #expect(DurationText.format(.microseconds(Int64.max)) == "106751991d04h")
        #expect(DurationText.format(.microseconds(Int64.min)) == "-106751991d04h")
        #expect(DurationText.format(.microseconds(9_999_999)) == "10.0s")
        #expect(Duration.seconds(Int64.max).microseconds == Int64.max)
        #expect(Duration.seconds(Int64.min).microseconds == Int64.min)
    }

    @Test("durations format as people read them", arguments: [(850_000, "850ms"), (1_240_000, "1.2s"), (42_000_000, "42s"),
                                                              (184_000_000, "3m04s"), (7_500_000_000, "2h05m")])
    func format(micros: Int64, text: String) {
        #expect(DurationText.format(.microseconds(micros)) == text)
    }

    @Test("progress lines", arguments: [("3/10 copying", 0.3, "copying"), ("0.42", 0.42, nil), ("42% files", 0.42, "files")])
    func progress(line: String, fraction: Double, message: String?) {
        let progress = Progress(line: line)
        #expect(abs((progress?.fraction ?? -1) - fraction) < 1e-9)
        #expect(progress?.message == message)
    }

    @Test("params are checked against their declaration and build the key")
    func params() throws {
        let action = Action(name: "deploy", exec: ["true"], params: [
            "env": ParamSpec(pattern: try ParamPattern("^(staging|prod)$"), defaultValue: "staging"), "tag": ParamSpec(),
        ], keyParams: ["env"])
        let resolved = try action.resolveParams(["tag": "v1"])
        #expect(resolved == ["env": "staging", "tag": "v1"])
        #expect(action.key(for: resolved) == "deploy env=staging")
        #expect(throws: BatonError.badParam(name: "env", message: "param env: \"dev\" does not match ^(staging|prod)$")) {
            try action.resolveParams(["env": "dev", "tag": "x"])
        }
        #expect(throws: BatonError.self) { try action.resolveParams(["nope": "1", "tag": "x"]) }
        #expect(throws: BatonError.badParam(name: "tag", message: "param tag is required by action deploy")) { try action.resolveParams([:]) }
        #expect(throws: BatonError.self) { try action.resolveParams(["tag": "a\nb"]) }
    }
}
