import BatonEngine
import Glibc

/// The clocks, read here: the engine is given their readings and reads none itself.
extension Timestamp {
    /// The wall-clock time now.
    public static var now: Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(rawValue: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000)
    }

    /// The time since boot, suspended time included (`CLOCK_BOOTTIME`): a clock no one steps,
    /// on which windows are measured within a boot.
    public static var uptime: Duration {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec))
    }

}

extension BatonError {
    /// A sentence for people, as of now.
    public var message: String { message(at: .now) }
}
