import Foundation

// Usage: EmbedMigrations OUTPUT.swift MIGRATION.sql...
// Writes a Swift file declaring `embeddedMigrations`, one entry per file, in version order.
// A file name must be NNNN_title.sql; anything else stops the build with a message naming it.

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedMigrations OUTPUT.swift MIGRATION.sql...\n".utf8))
    exit(2)
}

struct Migration {
    var version: Int
    var name: String
    var sql: String
}

var migrations: [Migration] = []
for path in arguments.dropFirst() {
    let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
    let parts = file.split(separator: "_", maxSplits: 1)
    guard parts.count == 2, parts[0].count == 4, let version = Int(parts[0]), version > 0 else {
        FileHandle.standardError.write(Data("error: \(path): a migration is named NNNN_title.sql\n".utf8))
        exit(1)
    }
    let sql = try String(contentsOfFile: path, encoding: .utf8)
    migrations.append(Migration(version: version, name: String(parts[1]), sql: sql))
}
migrations.sort { $0.version < $1.version }
for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
    FileHandle.standardError.write(Data("error: migration versions must run 1, 2, 3… without gaps; found \(migration.version) at position \(index + 1)\n".utf8))
    exit(1)
}

/// Swift raw strings need more `#` than any run of `#` that follows a quote in the text.
func rawLiteral(_ text: String) -> String {
    var hashes = "#"
    while text.contains("\"" + hashes) { hashes += "#" }
    return "\(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)"
}

var source = "// Generated at build time from Migrations/ by EmbedMigrations. Do not edit.\n\n"
source += "let embeddedMigrations: [(version: Int, name: String, sql: String)] = [\n"
for migration in migrations {
    source += "    (\(migration.version), \"\(migration.name)\", \(rawLiteral(migration.sql))),\n"
}
source += "]\n"
try source.write(toFile: output, atomically: true, encoding: .utf8)
