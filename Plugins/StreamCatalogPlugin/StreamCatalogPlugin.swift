import Foundation
import PackagePlugin

/// Turns each `*.streams` catalog in a target into typed `StreamDescriptor` constants
/// (`enum Streams` for a file named `streams.streams` or `Streams.streams`, else the file's name).
/// A bad catalog fails the build with diagnostics naming the file, line and entry.
@main
struct StreamCatalogPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let tool = try context.tool(named: "conduit-stream-catalog")
        return target.sourceFiles(withSuffix: "streams").map { file in
            let base = file.url.deletingPathExtension().lastPathComponent
            let namespace = base.prefix(1).uppercased() + base.dropFirst()
            let output = context.pluginWorkDirectoryURL.appending(path: "\(namespace)Catalog.swift")
            return .buildCommand(
                displayName: "Generating stream catalog \(namespace) from \(file.url.lastPathComponent)",
                executable: tool.url,
                arguments: ["generate", file.url.path, output.path, "--namespace", namespace],
                inputFiles: [file.url],
                outputFiles: [output]
            )
        }
    }
}
