import ArgumentParser

@main
struct ConduitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conduit",
        abstract: "Real-time application data channels: try them, drive them, measure them.",
        discussion: """
            Transports are chosen by URL: loopback://NAME (in process, the default), and the transports a
            build registers. Session types: reliable-message, unreliable-message, reliable-bytes, unreliable-bytes.
            """,
        subcommands: [DemoCommand.self]
    )
}
