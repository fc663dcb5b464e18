import ConduitStreamCatalog
import Foundation

// conduit-stream-catalog generate INPUT OUTPUT [--namespace NAME]
// conduit-stream-catalog lint INPUT...
// conduit-stream-catalog print INPUT...
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: conduit-stream-catalog generate INPUT OUTPUT [--namespace NAME] | lint INPUT... | print INPUT..."

func load(_ path: String) -> StreamCatalog? {
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
        FileHandle.standardError.write(Data("\(path):1: error: cannot read the stream catalog\n".utf8))
        return nil
    }
    let (catalog, problems) = StreamCatalog.parse(text, file: path)
    for problem in problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
    return problems.isEmpty ? catalog : nil
}

guard let command = arguments.first else {
    FileHandle.standardError.write(Data("\(usage)\n".utf8))
    exit(2)
}
switch command {
case "generate":
    guard arguments.count >= 3 else {
        FileHandle.standardError.write(Data("\(usage)\n".utf8))
        exit(2)
    }
    var namespace = "Streams"
    if let flag = arguments.firstIndex(of: "--namespace"), flag + 1 < arguments.count { namespace = arguments[flag + 1] }
    guard let catalog = load(arguments[1]) else { exit(1) }
    let source = catalog.swiftSource(namespace: namespace, sourceFile: URL(fileURLWithPath: arguments[1]).lastPathComponent)
    do { try source.write(toFile: arguments[2], atomically: true, encoding: .utf8) } catch {
        FileHandle.standardError.write(Data("error: cannot write \(arguments[2]): \(error)\n".utf8))
        exit(1)
    }
case "lint", "print":
    var failed = false
    for path in arguments.dropFirst() {
        guard let catalog = load(path) else {
            failed = true
            continue
        }
        if command == "print" { print("\(path):\n\(catalog.table())") } else { print("\(path): \(catalog.entries.count) streams, no problems") }
    }
    exit(failed ? 1 : 0)
default:
    FileHandle.standardError.write(Data("\(usage)\n".utf8))
    exit(2)
}
