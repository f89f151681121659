import Foundation
import PackagePlugin

/// Embeds every file of the target's `Assets` folder (the dashboard's HTML, CSS and JavaScript)
/// into the target as Swift source: the page works from the binary alone, without a network.
@main
struct EmbedAssetsPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appendingPathComponent("Sources/\(target.name)/Assets")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.hasPrefix(".") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedAssets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) assets into \(target.name)",
                executable: try context.tool(named: "EmbedAssets").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
