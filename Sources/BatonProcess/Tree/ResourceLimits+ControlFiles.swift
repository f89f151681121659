import BatonEngine
import BatonRuntime
extension ResourceLimits {
    /// The control files of an attempt's cgroup v2 cgroup and what is written to each.
    public var controlFiles: [(file: String, value: String)] {
        fields.flatMap { LimitPlan.v2Writes($0, self) }.map { ($0.file, $0.value) }
    }
}
