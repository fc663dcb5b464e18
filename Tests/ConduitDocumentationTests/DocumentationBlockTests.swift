import Foundation
import Testing

/// Every code block of the README and of the DocC articles that shows a program or a command is
/// run by a test: Swift programs appear verbatim in this target's `*Programs.swift` files (whose
/// tests run them), the `Package.swift` fragment is evaluated as a manifest, shell blocks run
/// against the built `conduit` (or are allow-listed with a reason), and DocC snippets run.
@Suite struct DocumentationBlockTests {
    /// A `Package.swift` fragment: checked as a manifest rather than run.
    static func isManifestFragment(_ block: CodeBlock) -> Bool {
        block.lines.first?.hasPrefix("dependencies:") == true && block.text.contains(".package(")
    }

    @Test func theDocumentsHaveBlocks() throws {
        // Guards the extractor: the README has Swift and shell blocks, and each is closed.
        #expect(try Documentation.blocks("swift").count >= 7)
        #expect(try Documentation.blocks("sh").count >= 10)
        for block in try Documentation.blocks(in: "README.md") {
            #expect(!block.lines.contains { $0.hasPrefix("```") }, "\(block) swallowed a fence")
        }
    }

    @Test func theMatcherIsStrict() {
        let source = ["func f() {", "    let a = 1", "", "    print(a)", "}", "// let a = 1", "// print(a)"]
        #expect(Documentation.appears(["let a = 1", "", "print(a)"], in: source))
        #expect(!Documentation.appears(["let a = 1", "print(a)"], in: source))       // a line missing
        #expect(!Documentation.appears(["let a = 2", "", "print(a)"], in: source))   // a line changed
        #expect(!Documentation.appears(["print(a)", "}", "let a = 1"], in: source))  // only in a comment
        #expect(Documentation.appears(["import Foundation", "", "print(a)"], in: source + ["import Foundation"]))
        #expect(!Documentation.appears(["import Foundation", "", "print(a)"], in: source))
    }

    /// Each Swift block is in a `*Programs.swift` file of this target, line for line.
    @Test func everySwiftBlockIsAProgramThatATestRuns() throws {
        let sources = try Documentation.programSources()
        #expect(!sources.isEmpty)
        for block in try Documentation.blocks("swift") where !Self.isManifestFragment(block) {
            let found = sources.contains { Documentation.appears(block.lines, in: $0.lines) }
            #expect(found, "\(block) is not, verbatim, in a *Programs.swift file of ConduitDocumentationTests:\n\(block.text)")
        }
    }

    /// The README's `Package.swift` lines, in a manifest of a host app: it evaluates, and names
    /// this package's products and traits.
    @Test func theManifestFragmentIsAManifest() async throws {
        let fragments = try Documentation.blocks("swift").filter(Self.isManifestFragment)
        #expect(fragments.count == 1)
        let rootManifest = try String(contentsOf: Documentation.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for fragment in fragments {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let manifest = """
                // swift-tools-version:6.1
                import PackageDescription

                let package = Package(
                    name: "MyApp",
                    platforms: [.macOS(.v15)],
                \(fragment.lines.map { $0.isEmpty ? "" : "    " + $0 }.joined(separator: "\n"))
                )

                """
            try Data(manifest.utf8).write(to: directory.appendingPathComponent("Package.swift"))
            let result = try await runProcess("/usr/bin/env", ["swift", "package", "dump-package"], in: directory)
            try #require(result.status == 0, "\(fragment) is not a valid manifest fragment:\n\(result.output)")
            let json = try #require(result.output.firstIndex(of: "{").map { result.output[$0...] })
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            // Every product it names is a library product of this package, from package "conduit".
            let targets = try #require(dump["targets"] as? [[String: Any]])
            let products = targets.flatMap { ($0["dependencies"] as? [[String: Any]]) ?? [] }.compactMap { $0["product"] as? [Any] }
            #expect(!products.isEmpty)
            for product in products {
                let name = try #require(product.first as? String)
                #expect(product.count > 1 && product[1] as? String == "conduit", "\(name) is not from package conduit")
                #expect(rootManifest.contains(".library(name: \"\(name)\""), "\(name) is not a library product of Package.swift")
            }
            // The traits it enables are this package's traits.
            let text = fragment.text
            for trait in ["Zlib", "SRTP", "SCTP", "KernelSCTP"] where text.contains("\"\(trait)\"") {
                #expect(rootManifest.contains(".trait(name: \"\(trait)\""), "\(trait) is not a trait of Package.swift")
            }
            #expect(rootManifest.contains("name: \"conduit\""))
        }
    }

    /// Each shell block is exactly one entry of `ShellBlocks.all`: run below, or allow-listed
    /// with its reason. An edited block matches no entry until its test is updated.
    @Test func everyShellBlockRunsOrIsAllowListed() throws {
        let blocks = try Documentation.blocks("sh")
        let entries = ShellBlocks.all.map { (entry: $0, lines: Documentation.dedent($0.text.split(separator: "\n", omittingEmptySubsequences: false))) }
        for block in blocks {
            let matches = entries.filter { $0.lines == block.lines }
            #expect(matches.count == 1, "\(block) is neither run nor allow-listed in ShellBlocks (edit the entry with the block):\n\(block.text)")
        }
        for entry in entries where !blocks.contains(where: { $0.lines == entry.lines }) {
            Issue.record("ShellBlocks has an entry that no document shows any more:\n\(entry.entry.text)")
        }
        for entry in ShellBlocks.all where entry.allowListed != nil {
            #expect(entry.allowListed!.count > 20, "an allow-listed block needs its reason")
        }
    }

    /// Every DocC snippet (`Snippets/**/*.swift`) was built by `swift build` and exits 0.
    @Test func everySnippetRuns() async throws {
        let folder = Documentation.root.appendingPathComponent("Snippets")
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return }   // no snippets yet
        let snippets = walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
        let bin = Documentation.binDirectory
        for snippet in snippets {
            let name = URL(fileURLWithPath: snippet).deletingPathExtension().lastPathComponent
            let executable = bin.appendingPathComponent(name)
            guard FileManager.default.isExecutableFile(atPath: executable.path) else {
                Issue.record("the snippet \(snippet) was not built (no \(executable.path)); run swift build first")
                continue
            }
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let result = try await runProcess("/usr/bin/timeout", ["-k", "5", "120", executable.path], in: directory)
            #expect(result.status == 0, "the snippet \(snippet) exited \(result.status):\n\(result.output)")
        }
    }
}

/// The shell blocks that run here, one after the other (they use fixed ports on 127.0.0.1).
@Suite(.serialized) struct ShellBlockTests {
    @Test(arguments: ShellBlocks.all.filter { $0.allowListed == nil })
    func shellBlockRuns(_ entry: ShellBlock) async throws {
        if let known = entry.knownIssue {
            // Only the named outputs may be missing; any other failure of the block still fails.
            let missing = entry.knownMissingOutputs
            try await withKnownIssue(
                Comment(rawValue: known), isIntermittent: entry.intermittent,
                { try await Self.run(entry) },
                matching: { issue in missing.contains { String(describing: issue).contains("no \"\($0)\" in") } }
            )
        } else {
            try await Self.run(entry)
        }
    }

    static func run(_ entry: ShellBlock) async throws {
        let bin = Documentation.binDirectory
        try #require(FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("conduit").path),
                     "no conduit in \(bin.path): build it with swift build --enable-all-traits")
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The block as the README has it, after the entry's prelude; background jobs still running
        // at the end are killed; `timeout` kills the whole process group if it hangs.
        let script = """
            set -u
            export PATH="\(bin.path):$PATH"
            trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT
            \(entry.prelude)
            \(entry.text)
            """
        try Data(script.utf8).write(to: directory.appendingPathComponent("block.sh"))
        let result = try await runProcess("/usr/bin/timeout", ["-k", "5", "\(entry.limitSeconds)", "/bin/bash", "block.sh"], in: directory)
        #expect(result.status == entry.status, "exit status \(result.status), expected \(entry.status):\n\(result.output)")
        for expected in entry.output {
            #expect(result.output.contains(expected), "no \"\(expected)\" in:\n\(result.output)")
        }
    }
}
