import ArgumentParser
import Foundation

@main
struct ConduitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conduit",
        abstract: "Real-time application data channels: try them, drive them, measure them.",
        discussion: """
            Transports are chosen by URL: loopback://NAME (in process, the default), and the transports a
            build registers. Session types: reliable-message, unreliable-message, reliable-bytes, unreliable-bytes.
            """,
        subcommands: [DemoCommand.self, ListenCommand.self, SendCommand.self, ImpairCommand.self, BenchCommand.self, BenchLatencyPeerCommand.self, RelayCommand.self, TokenCommand.self, JoinCommand.self, InviteCommand.self, AnswerCommand.self]
    )

    /// Bad input gets one line on standard error and a non-zero exit; help still prints in full.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
            } else {
                let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "failed"
                if !message.isEmpty { FileHandle.standardError.write(Data("conduit: error: \(message)\n".utf8)) }
            }
            Foundation.exit(code.rawValue)
        }
    }
}
