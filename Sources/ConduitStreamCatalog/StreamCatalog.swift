/// The stream catalog: how a team fixes its stream IDs at design time.
///
/// A catalog is a text file (`*.streams`) in a target, one stream per line:
///
/// ```
/// # name        id   type               description
/// chat          100  reliable-message   Chat lines during the call
/// cursor        101  unreliable-message Cursor positions
/// ```
///
/// Blank lines and `#` comments are ignored. Names must be Swift identifiers; IDs 100...999 and
/// unique; types one of `reliable-message`, `unreliable-message`, `reliable-bytes`,
/// `unreliable-bytes`. The build-tool plugin turns the file into typed constants and fails the
/// build with a diagnostic naming the file, line and entry for anything else.
public struct StreamCatalog: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var id: Int
        public var type: String
        public var description: String
        public var line: Int
    }

    public struct Diagnostic: Error, Sendable, Hashable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var message: String
        /// `file:line: error: message`, the form compilers and SwiftPM show as a diagnostic.
        public var description: String { "\(file):\(line): error: \(message)" }
    }

    public static let types = ["reliable-message", "unreliable-message", "reliable-bytes", "unreliable-bytes"]
    public static let idRange = 100...999

    public var entries: [Entry]

    /// Parses and validates a catalog. `problems` lists every problem found, not just the first;
    /// `catalog` holds the valid entries.
    public static func parse(_ text: String, file: String) -> (catalog: StreamCatalog, problems: [Diagnostic]) {
        var entries: [Entry] = []
        var problems: [Diagnostic] = []
        var namesSeen: [String: Int] = [:]
        var idsSeen: [Int: (name: String, line: Int)] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard !fields.isEmpty else { continue }
            func problem(_ message: String) { problems.append(Diagnostic(file: file, line: lineNumber, message: message)) }
            guard fields.count >= 3 else {
                problem("entry '\(fields[0])' needs at least a name, an ID and a type")
                continue
            }
            let name = String(fields[0])
            let description = fields.dropFirst(3).joined(separator: " ")
            var valid = true
            if !isSwiftIdentifier(name) {
                problem("entry '\(name)': the name must be a Swift identifier (letters, digits, underscores; not starting with a digit)")
                valid = false
            } else if let first = namesSeen[name] {
                problem("entry '\(name)': the name is already used on line \(first)")
                valid = false
            }
            guard let id = Int(fields[1]) else {
                problem("entry '\(name)': stream ID '\(fields[1])' is not an integer")
                continue
            }
            if !idRange.contains(id) {
                problem("entry '\(name)': stream ID \(id) is outside 100...999")
                valid = false
            } else if let first = idsSeen[id] {
                problem("entry '\(name)': stream ID \(id) is already used by '\(first.name)' on line \(first.line)")
                valid = false
            }
            let type = String(fields[2])
            if !types.contains(type) {
                problem("entry '\(name)': unknown session type '\(type)' (expected \(types.joined(separator: ", ")))")
                valid = false
            }
            namesSeen[name] = namesSeen[name] ?? lineNumber
            if idRange.contains(id), idsSeen[id] == nil { idsSeen[id] = (name, lineNumber) }
            if valid { entries.append(Entry(name: name, id: id, type: type, description: description, line: lineNumber)) }
        }
        return (StreamCatalog(entries: entries), problems)
    }

    static func isSwiftIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        let keywords: Set<String> = ["class", "struct", "enum", "let", "var", "func", "static", "self", "Self", "init", "default", "case", "switch", "if", "else", "for", "in", "return", "import", "public", "private", "internal", "protocol", "extension", "true", "false", "nil", "all"]
        guard !keywords.contains(name) else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// Swift source declaring `enum <namespace>` with one `StreamDescriptor` per entry and `all`.
    public func swiftSource(namespace: String, sourceFile: String) -> String {
        var out = "// Generated by the Conduit stream catalog plugin from \(sourceFile). Do not edit.\n"
        out += "import ConduitCore\n\n"
        out += "/// The streams declared in \(sourceFile).\n"
        out += "enum \(namespace) {\n"
        for entry in entries {
            let caseName = Self.typeCase(entry.type)
            if !entry.description.isEmpty { out += "    /// \(entry.description)\n" }
            out += "    static let \(entry.name) = StreamDescriptor(name: \(Self.quoted(entry.name)), id: \(entry.id), type: .\(caseName), summary: \(Self.quoted(entry.description)))\n"
        }
        out += "\n    /// Every stream, in catalog order.\n"
        out += "    static let all: [StreamDescriptor] = [\(entries.map(\.name).joined(separator: ", "))]\n"
        out += "}\n"
        return out
    }

    /// A table for people: `conduit-stream-catalog --print`.
    public func table() -> String {
        let width = max(4, entries.map(\.name.count).max() ?? 0)
        var out = "name".padding(width) + "  id   type                description\n"
        for entry in entries {
            out += entry.name.padding(width) + "  \(entry.id)  " + entry.type.padding(18) + "  \(entry.description)\n"
        }
        return out
    }

    static func typeCase(_ type: String) -> String {
        switch type {
        case "reliable-message": "reliableMessage"
        case "unreliable-message": "unreliableMessage"
        case "reliable-bytes": "reliableBytes"
        default: "unreliableBytes"
        }
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
