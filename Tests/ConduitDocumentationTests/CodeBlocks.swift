import Foundation

/// One fenced code block of a Markdown document.
struct CodeBlock: Sendable, CustomStringConvertible {
    /// The document, relative to the package root.
    let document: String
    /// The line of the opening fence (1-based).
    let line: Int
    let language: String
    /// The block's lines with their common indentation removed and trailing spaces dropped.
    let lines: [String]

    var text: String { lines.joined(separator: "\n") }
    var description: String { "\(document):\(line) (```\(language))" }
}

/// The package's documentation and this test target's sources, read from the checkout.
enum Documentation {
    /// The package root: three levels above this file.
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and every DocC article (`Sources/*/Documentation.docc/**/*.md`).
    static func documents() -> [String] {
        var documents = ["README.md"]
        let sources = root.appendingPathComponent("Sources")
        let modules = (try? FileManager.default.contentsOfDirectory(atPath: sources.path)) ?? []
        for module in modules.sorted() {
            let catalog = sources.appendingPathComponent(module).appendingPathComponent("Documentation.docc")
            guard let walker = FileManager.default.enumerator(atPath: catalog.path) else { continue }
            let articles = walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".md") }.sorted()
            documents += articles.map { "Sources/\(module)/Documentation.docc/\($0)" }
        }
        return documents
    }

    /// Every fenced block in `language` (`swift`, `sh`) of every document.
    static func blocks(_ language: String) throws -> [CodeBlock] {
        try documents().flatMap { try blocks(in: $0) }.filter { $0.language == language }
    }

    static func blocks(in document: String) throws -> [CodeBlock] {
        let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
        var blocks: [CodeBlock] = []
        var open: (line: Int, language: String, fence: String, lines: [String])?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if var current = open {
                if trimmed.hasPrefix(current.fence) && trimmed.drop(while: { $0 == "`" || $0 == "~" }).allSatisfy(\.isWhitespace) {
                    blocks.append(CodeBlock(document: document, line: current.line, language: current.language, lines: dedent(current.lines)))
                    open = nil
                } else {
                    current.lines.append(String(line))
                    open = current
                }
            } else if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                let fence = String(trimmed.prefix { $0 == "`" || $0 == "~" })
                let info = trimmed.dropFirst(fence.count).split(separator: " ").first.map(String.init) ?? ""
                open = (index + 1, info, fence, [])
            }
        }
        return blocks
    }

    /// Removes the indentation common to the non-blank lines and trailing whitespace.
    static func dedent<S: StringProtocol>(_ lines: [S]) -> [String] {
        let trimmed = lines.map { line in String(line.reversed().drop(while: \.isWhitespace).reversed()) }
        let indent = trimmed.filter { !$0.isEmpty }.map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
        var result = trimmed.map { $0.isEmpty ? "" : String($0.dropFirst(indent)) }
        while result.first == "" { result.removeFirst() }
        while result.last == "" { result.removeLast() }
        return result
    }

    /// The Swift files of this test target whose tests run the documentation's programs.
    static func programSources() throws -> [(name: String, lines: [String])] {
        let folder = root.appendingPathComponent("Tests/ConduitDocumentationTests")
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            .filter { $0.hasSuffix("Programs.swift") }
            .map { name in
                let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                return (name, text.split(separator: "\n", omittingEmptySubsequences: false).map {
                    String($0.reversed().drop(while: \.isWhitespace).reversed())
                })
            }
    }

    /// Whether `block` appears in `source` line for line, indented by whitespace only (so not in a
    /// comment). A block's leading `import` lines must be among the file's own imports instead,
    /// since imports cannot stand inside a function.
    static func appears(_ block: [String], in source: [String]) -> Bool {
        var body = block[...]
        while let first = body.first, first.hasPrefix("import ") {
            guard source.contains(first) else { return false }
            body = body.dropFirst()
        }
        while body.first == "" { body = body.dropFirst() }
        guard let head = body.first else { return true }
        let body2 = Array(body)
        for start in source.indices where source[start].hasSuffix(head) {
            let indent = source[start].dropLast(head.count)
            guard indent.allSatisfy({ $0 == " " }), start + body2.count <= source.count else { continue }
            let matches = body2.indices.allSatisfy { offset in
                let line = source[start + offset]
                return body2[offset].isEmpty ? line.isEmpty : line == indent + body2[offset]
            }
            if matches { return true }
        }
        return false
    }

    /// Where `swift build` put this test bundle, and with it the `conduit` tool and the snippets.
    static var binDirectory: URL {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // On macOS the bundle's executable sits in Foo.xctest/Contents/MacOS.
        while directory.path.contains(".xctest") { directory = directory.deletingLastPathComponent() }
        return directory
    }
}
