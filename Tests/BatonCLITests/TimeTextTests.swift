import BatonCore
@testable import baton
import Foundation
import Testing

@Suite("Times as people write them", .offPool)
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
    func relative(text: String, seconds: Int64) throws {
        #expect(try TimeText.parse(text, now: Self.now) == Timestamp(rawValue: Self.now.rawValue - seconds * 1_000_000))
    }

    @Test("named days and absolute dates are local times")
    func absolute() throws {
        #expect(try TimeText.parse("today", now: Self.now) == Self.local(2026, 11, 15))
        #expect(try TimeText.parse("yesterday", now: Self.now) == Self.local(2026, 11, 14))
        #expect(try TimeText.parse("2026-11-01", now: Self.now) == Self.local(2026, 11, 1))
        #expect(try TimeText.parse("2026-11-01T14:00", now: Self.now) == Self.local(2026, 11, 1, 14, 0))
        #expect(try TimeText.parse("2026-11-01T14:00:30", now: Self.now) == Self.local(2026, 11, 1, 14, 0, 30))
    }

    @Test("anything else is refused", arguments: ["2099926-11-9", "1969-12-31", "", "soon", "2026-13-01", "2026-11-32", "2026-11", "2026-11-01T25:00", "2026-11-01T14", "T14:00", "-5m"])
    func refused(text: String) {
        #expect(throws: TimeTextError.self) { try TimeText.parse(text, now: Self.now) }
    }

    @Test("impossible dates and times are refused naming the field, not moved to another day", arguments: [
        ("2026-02-31", "2026-02-31: the day is 31, but February 2026 has 28 days"),
        ("2026-02-29", "2026-02-29: the day is 29, but February 2026 has 28 days"),
        ("2100-02-29", "2100-02-29: the day is 29, but February 2100 has 28 days"),
        ("2026-11-31T08:10", "2026-11-31T08:10: the day is 31, but November 2026 has 30 days"),
        ("2026-04-31", "2026-04-31: the day is 31, but April 2026 has 30 days"),
        ("2026-06-31T00:00:00", "2026-06-31T00:00:00: the day is 31, but June 2026 has 30 days"),
        ("2026-11-00", "2026-11-00: the day is 0, but November 2026 has 30 days"),
        ("2026-13-01", "2026-13-01: the month is 13; expected 1 to 12"),
        ("1969-12-31", "1969-12-31: the year is 1969; expected 1970 to 9999"),
        ("2026-11-01T25:00", "2026-11-01T25:00: the hour is 25; expected 0 to 23"),
        ("2026-11-01T14:60", "2026-11-01T14:60: the minute is 60; expected 0 to 59"),
        ("2026-11-01T14:00:61", "2026-11-01T14:00:61: the second is 61; expected 0 to 59"),
        ("soon", "expects \(TimeText.forms), got soon"),
        ("2026-11", "expects \(TimeText.forms), got 2026-11"),
    ])
    func impossible(text: String, message: String) {
        #expect(throws: TimeTextError.self) { try TimeText.parse(text, now: Self.now) }
        do {
            _ = try TimeText.parse(text, now: Self.now)
        } catch {
            #expect(error.description == message)
        }
    }

    /// mktime moves 02:30 on the morning clocks go forward to 03:30; the time zone is the child's alone.
    @Test("a local time the clocks skip is refused; --since says which option")
    func skippedTime() throws {
        let baton = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/baton").standardizedFileURL.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: baton)
        process.arguments = ["history", "--database", "/nonexistent/history.sqlite", "--since", "2026-03-29T02:30"]
        process.environment = ["TZ": "Europe/Berlin", "PATH": "/usr/bin:/bin"]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
        #expect(text.hasPrefix("Error: baton history: --since 2026-03-29T02:30: there is no such local time on that day (the clocks skip it)\n"), "\(text)")
    }

    @Test("the last days of each month exist, leap days in leap years only", arguments: [
        ("2024-02-29", 2024, 2, 29), ("2000-02-29", 2000, 2, 29), ("2026-04-30", 2026, 4, 30), ("2026-12-31", 2026, 12, 31),
    ])
    func lastDays(text: String, year: Int32, month: Int32, day: Int32) throws {
        #expect(try TimeText.parse(text, now: Self.now) == Self.local(year, month, day))
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

@Suite("Format.printf: what String(format:) wrote, through vsnprintf")
struct PrintfTests {
    @Test("numbers, padded and rounded as Foundation formatted them", arguments: [0.0, 0.5, 0.125, 0.9995, 1.0005, 2.5, 65.4321, 7_200.0, 1e-7, 123_456.789])
    func numbers(value: Double) {
        #expect(Format.printf("%.3f", value) == String(format: "%.3f", value))
        #expect(Format.printf("%.0f%%", value) == String(format: "%.0f%%", value))
        let whole = Int32(value.rounded(.down))
        #expect(Format.printf("%04d-%02d", whole, whole % 60) == String(format: "%04d-%02d", whole, whole % 60))
        #expect(Format.printf("%02ld:%02ld", Int(whole) / 3600, Int(whole) % 3600 / 60) == String(format: "%02ld:%02ld", Int(whole) / 3600, Int(whole) % 3600 / 60))
        #expect(Format.printf(#"\x%02x"#, UInt32(whole % 128)) == String(format: #"\x%02x"#, UInt32(whole % 128)))
    }

    @Test("text longer than the first buffer comes out whole; padded cuts and fills as NSString's padding did")
    func long() {
        let wide = Format.printf("%0300d", Int32(7))
        #expect(wide.count == 300 && wide.hasSuffix("07"))
        for name in ["run", "history", "a-name-longer-than-12"] {
            #expect(Format.padded(name, 12) == name.padding(toLength: 12, withPad: " ", startingAt: 0))
        }
    }
}
