import Foundation
import PackagePlugin

/// `swift package stream-catalog [lint|print]`: checks or prints every `*.streams` catalog in
/// the package's targets.
@main
struct StreamCatalogCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let mode = arguments.first ?? "lint"
        guard mode == "lint" || mode == "print" else {
            Diagnostics.error("unknown mode '\(mode)': use lint or print")
            return
        }
        let files = context.package.targets.compactMap { $0 as? SourceModuleTarget }
            .flatMap { $0.sourceFiles(withSuffix: "streams").map(\.url.path) }
        guard !files.isEmpty else {
            print("no *.streams catalogs in this package")
            return
        }
        let tool = try context.tool(named: "conduit-stream-catalog")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = [mode] + files
        try process.run()
        process.waitUntilExit()
        if process.terminationStatus != 0 { Diagnostics.error("the stream catalog has problems (see above)") }
    }
}
