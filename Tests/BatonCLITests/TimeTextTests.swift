import BatonCore
@testable import baton
import Foundation
import Testing

@Suite("Times as people write them")
struct TimeTextTests {
    /// 2026-11-15 13:30:00 local time.
    static let now: Timestamp = {
        var fields = tm()
        fields.tm_year = 126; fields.tm_mon = 10; fields.tm_mday = 15; fields.tm_hour = 13; fields.tm_min = 30; fields.tm_isdst = -1
        return Timestamp(rawValue: Int64(mktime(&fields)) * 1_000_000)
    }()

    static func local(_ year: Int32, _ month: Int32, _ day: Int32, _ hour: Int32 = 0, _ minute: Int32 = 0, _ second: Int32 = 0) -> Timestamp {
        var fields = tm()
        fields.tm_year = year - 1900; fields.tm_mon = month - 1; fields.tm_mday = day
        fields.tm_hour = hour; fields.tm_min = minute; fields.tm_sec = second; fields.tm_isdst = -1
        return Timestamp(rawValue: Int64(mktime(&fields)) * 1_000_000)
    }

    @Test("relative forms count back from now", arguments: [("30m", 1_800), ("2h", 7_200), ("7d", 604_800), ("90s", 90)])
    func relative(text: String, seconds: Int64) {
        #expect(TimeText.parse(text, now: Self.now) == Timestamp(rawValue: Self.now.rawValue - seconds * 1_000_000))
    }

    @Test("named days and absolute dates are local times")
    func absolute() {
        #expect(TimeText.parse("today", now: Self.now) == Self.local(2026, 11, 15))
        #expect(TimeText.parse("yesterday", now: Self.now) == Self.local(2026, 11, 14))
        #expect(TimeText.parse("2026-11-01", now: Self.now) == Self.local(2026, 11, 1))
        #expect(TimeText.parse("2026-11-01T14:00", now: Self.now) == Self.local(2026, 11, 1, 14, 0))
        #expect(TimeText.parse("2026-11-01T14:00:30", now: Self.now) == Self.local(2026, 11, 1, 14, 0, 30))
    }

    @Test("anything else is refused", arguments: ["2099926-11-9", "1969-12-31", "", "soon", "2026-13-01", "2026-11-32", "2026-11", "2026-11-01T25:00", "2026-11-01T14", "T14:00", "-5m"])
    func refused(text: String) {
        #expect(TimeText.parse(text, now: Self.now) == nil)
    }

    @Test("ISO times carry their offset, or Z in UTC; CSV fields are quoted only when they must be")
    func formats() {
        let epoch = Timestamp(rawValue: 1_795_000_000_000_000)
        #expect(Format.isoTime(epoch, utc: true) == "2026-11-18T11:06:40Z")
        let local = Format.isoTime(epoch)
        #expect(local.count == 25)
        #expect(["+", "-"].contains(String(local.dropLast(5).suffix(1))))
        #expect(Format.csvField("plain") == "plain")
        #expect(Format.csvField("a,b") == "\"a,b\"")
        #expect(Format.csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(Format.csvField("two\nlines") == "\"two\nlines\"")
    }
}
