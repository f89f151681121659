import BatonCore

/// Each action's fingerprint (`Action.fingerprint`) as a batch of triggers needs it: computed the
/// first time a decision asks for it (a trigger that shares a run whose definition is known, or
/// that makes a run, whose row records it), then kept for the batch's other triggers of that
/// action and for its new runs' rows. Kept by name
/// with the definition it was computed from: a batch may hold triggers from before and after a
/// reload, and two definitions of one name differ in their fingerprints.
struct ActionFingerprints: Sendable {
    /// By name: each definition met, with its fingerprint (nearly always one).
    private var kept: [String: [(action: Action, fingerprint: String)]] = [:]
    /// How many fingerprints were computed (tests).
    private(set) var computed = 0

    /// The fingerprint of `action`, computed unless kept.
    mutating func of(_ action: Action) -> String {
        if let known = kept[action.name]?.first(where: { $0.action == action }) { return known.fingerprint }
        let fingerprint = action.fingerprint
        kept[action.name, default: []].append((action, fingerprint))
        computed += 1
        return fingerprint
    }
}
