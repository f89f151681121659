import BatonClient
import Foundation

// The seeds' async button as a terminal program: press, show each phase as it comes, end with
// the outcome (exit 0 on success, 1 on failure or cancellation, 2 when batond refused or is gone).
let action = CommandLine.arguments.dropFirst().first ?? "hello"
do {
    let baton = try BatonClient()
    let handle = baton.trigger(action)
    // Each phase once (progress reports repeat the phase), the end last.
    var shown = ""
    for try await update in handle.updates where update.run.phase.rawValue != shown {
        shown = update.run.phase.rawValue
        print("run \(update.run.id): \(shown)")
    }
    let outcome = try await handle.outcome
    print("run \(outcome.run.id) ended: \(outcome.phase.rawValue)\(outcome.shared ? " (shared)" : "")")
    exit(outcome.phase == .success ? 0 : 1)
} catch let error as BatonClientError {
    print("Error: \(error)")
    if case .cancelled = error { exit(1) }
    exit(2)
} catch {
    print("Error: \(error)")
    exit(2)
}
