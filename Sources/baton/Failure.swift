import BatonClient
import BatonCore

/// A command that ends with an error: an exit code, a message for `Error:`, and maybe a `Try:`.
struct Failure: Error {
    var code: Int32
    var message: String
    var hint: String?
    /// batond's refusal this failure stands for, if it is one (commands branch on it, never on the message).
    var refusal: BatonClientError?

    init(code: Int32, message: String, hint: String? = nil, refusal: BatonClientError? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
        self.refusal = refusal
    }

    /// The failure a `BatonClient` error is: batond's message, with the exit code its case says.
    init(_ error: BatonClientError) {
        self.init(code: ExitCode.of(error), message: error.description, refusal: error)
    }
}
