/// What a reload of the config did: applied, with the warnings batond had about the new config
/// (each a sentence, answered in the `reload` response's `warnings`), or refused whole, with why.
public enum ReloadOutcome: Sendable, Equatable {
    case applied(warnings: [String])
    case refused(String)
}
