import Foundation

// Usage: EmbedAssets OUTPUT.swift FILE...
// Writes a Swift file declaring `embeddedAssets`: each file's name and its text, so that the
// dashboard's page, style and script are part of the binary (no files to install, no CDN).

let arguments = Array(CommandLine.arguments.dropFirst())
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedAssets OUTPUT.swift FILE...\n".utf8))
    exit(2)
}

var source = "// Generated at build time from Sources/BatonDashboard/Assets by EmbedAssets. Do not edit.\n\n"
/// Swift raw strings need more `#` than any run of `#` that follows a quote in the text.
func rawLiteral(_ text: String) -> String {
    var hashes = "#"
    while text.contains("\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
    return "\(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)"
}

source += "let embeddedAssets: [String: String] = [\n"
for path in arguments.dropFirst().sorted() {
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
        FileHandle.standardError.write(Data("error: \(path) is not readable UTF-8 text\n".utf8))
        exit(1)
    }
    let name = URL(fileURLWithPath: path).lastPathComponent
    source += "    \"\(name)\": \(rawLiteral(text)),\n"
}
source += "]\n"
try source.write(toFile: output, atomically: true, encoding: .utf8)
