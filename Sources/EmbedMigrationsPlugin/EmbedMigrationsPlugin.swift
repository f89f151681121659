import Foundation
import PackagePlugin

/// Embeds every `Migrations/NNNN_title.sql` file of the package into the target as Swift source,
/// so that a binary copied alone still creates and migrates its database. The fleet's target
/// (`BatonFleet`) gets the PostgreSQL schema, `Migrations/postgres/NNNN_title.sql`, instead.
@main
struct EmbedMigrationsPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        var directory = context.package.directoryURL.appendingPathComponent("Migrations")
        if target.name == "BatonFleet" { directory = directory.appendingPathComponent("postgres") }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations into \(target.name)",
                executable: try context.tool(named: "EmbedMigrations").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
