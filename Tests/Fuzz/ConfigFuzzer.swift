// libFuzzer target: the config parser. Any bytes give a Config or a ConfigError whose every
// problem names a field or the file, never a crash.
import BatonCore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        let config = try Config.parse(Data(bytes: data, count: size), file: "fuzz.json5")
        precondition(!config.actions.isEmpty, "a valid config without actions")
        for action in config.actions { precondition(!action.exec.isEmpty, "an action without exec") }
    } catch {
        precondition(!error.problems.isEmpty, "a refusal without a problem")
        precondition(!error.description.isEmpty)
    }
    return 0
}
