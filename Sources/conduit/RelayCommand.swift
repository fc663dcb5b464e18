import ArgumentParser
import Conduit
import ConduitRelay
import Logging
import Metrics
import ServiceLifecycle
import ConduitRooms
import ConduitRelayCore
import ConduitUDP

struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run a relay for group rooms on one or more transport URLs, until SIGTERM or SIGINT.",
        discussion: """
            Prints 'relay listening on URL' for each address once bound (udp://127.0.0.1:0 picks a port). Peers \
            join with tokens minted by 'conduit token' from the same secret file. Logs to standard error \
            (swift-log) and reports counters as swift-metrics gauges (conduit_relay_*) every --stats-interval \
            seconds. On SIGTERM or SIGINT it tells every member the relay is shutting down, closes every link \
            and exits 0.
            """
    )

    @Argument(help: "Transport URLs to listen on (loopback://NAME, udp://HOST:PORT, ...).")
    var urls: [String]

    @Option(name: .customLong("secret-file"), help: "File holding the secret that tokens are signed with.")
    var secretFile: String

    @Option(name: .customLong("stats-interval"), help: "Seconds between statistics log lines and metric updates.")
    var statsInterval: Double = 10

    @Option(name: .customLong("max-members"), help: "Members per room.")
    var maxMembers: Int = 256

    @Option(
        name: .customLong("cluster"),
        help: "NATS server (nats://HOST:PORT) through which this relay shares its rooms with the other relays given the same one (needs the NATS package trait)."
    )
    var cluster: String?

    @Option(name: .customLong("max-links-per-address"), help: "udp:// listeners: links one IP address may hold at once (any port).")
    var maxLinksPerAddress = UDPTransport.Configuration.ListenerLimits().maxLinksPerAddress

    @Option(name: .customLong("handshakes-per-address"), help: "udp:// listeners: links one IP address may establish per second.")
    var handshakesPerAddress = UDPTransport.Configuration.ListenerLimits().handshakesPerSecondPerAddress

    @Option(name: .customLong("handshakes-per-second"), help: "udp:// listeners: links established per second from all addresses together.")
    var handshakesPerSecond = UDPTransport.Configuration.ListenerLimits().handshakesPerSecond

    @Option(
        name: .customLong("log-level"),
        help: "Log level on standard error (trace, debug, info, notice, warning, error, critical); at debug the transports' link lifecycle too."
    )
    var logLevel: String = "info"

    func run() async throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one URL to listen on") }
        guard statsInterval > 0, statsInterval <= 86_400 else { throw ValidationError("--stats-interval must be in (0, 86400]") }
        guard maxMembers > 0, maxMembers < 65_000 else { throw ValidationError("--max-members must be 1...64999") }
        var listenerLimits = UDPTransport.Configuration.ListenerLimits()
        listenerLimits.maxLinksPerAddress = maxLinksPerAddress
        listenerLimits.handshakesPerSecondPerAddress = handshakesPerAddress
        listenerLimits.handshakesPerSecond = handshakesPerSecond
        try ReportOutput.checked { () throws(ConduitError) in try listenerLimits.validate() }
        let secret = try RelaySecretFile.load(secretFile)
        let transports = try CommandLogging.logger(level: logLevel)
        var logger = Logger(label: "conduit.relay")
        logger.logLevel = transports?.logLevel ?? .info
        let server = RelayServer(
            authority: RelayTokenAuthority(secret: secret),
            configuration: RelayConfiguration(maxMembersPerRoom: maxMembers),
            registry: CommandRegistry.make(logger: transports, listenerLimits: listenerLimits)
        )
        for url in urls {
            let bound = try await server.listen(on: url)
            ReportOutput.printNow("relay listening on \(bound)")
            logger.info("listening", metadata: ["url": "\(bound)"])
        }
        if let cluster {
            try await server.joinCluster(cluster)
            ReportOutput.printNow("relay joined the cluster at \(cluster)")
            logger.info("joined cluster", metadata: ["url": "\(cluster)"])
        }
        let service = RelayService(server: server, logger: logger, interval: .milliseconds(Int64(statsInterval * 1_000)))
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}

/// The relay as a swift-service-lifecycle service: runs until graceful shutdown, publishing its
/// counters meanwhile, then shuts the relay down (members are told, links closed).
struct RelayService: Service {
    let server: RelayServer
    let logger: Logger
    let interval: Duration

    func run() async throws {
        let reporter = Task {
            var last = RelayStatistics()
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let statistics = await server.statistics
                publish(statistics)
                if statistics != last { logger.info("statistics", metadata: Self.metadata(statistics)) }
                last = statistics
            }
        }
        try? await gracefulShutdown()
        reporter.cancel()
        logger.info("shutting down")
        await server.shutdown()
        let statistics = await server.statistics
        publish(statistics)
        logger.info("stopped", metadata: Self.metadata(statistics))
    }

    func publish(_ statistics: RelayStatistics) {
        Gauge(label: "conduit_relay_joins").record(statistics.joins)
        Gauge(label: "conduit_relay_frames_relayed").record(statistics.framesRelayed)
        Gauge(label: "conduit_relay_bytes_relayed").record(statistics.bytesRelayed)
        Gauge(label: "conduit_relay_unreliable_dropped").record(statistics.unreliableDropped)
        Gauge(label: "conduit_relay_slow_receivers").record(statistics.slowReceiversDisconnected)
        Gauge(label: "conduit_relay_join_deadlines_missed").record(statistics.joinDeadlinesMissed)
        Gauge(label: "conduit_relay_pending_evicted").record(statistics.pendingEvicted)
        Gauge(label: "conduit_relay_joins_rate_limited").record(statistics.joinsRateLimited)
        for refusal in RelayRefusal.allCases {
            Gauge(label: "conduit_relay_refusals", dimensions: [("kind", refusal.description)]).record(statistics.refusals(refusal))
        }
    }

    static func metadata(_ statistics: RelayStatistics) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "joins": "\(statistics.joins)", "leaves": "\(statistics.leaves)", "vanished": "\(statistics.vanished)",
            "framesRelayed": "\(statistics.framesRelayed)", "bytesRelayed": "\(statistics.bytesRelayed)",
            "unreliableDropped": "\(statistics.unreliableDropped)", "slowReceivers": "\(statistics.slowReceiversDisconnected)",
            "joinDeadlinesMissed": "\(statistics.joinDeadlinesMissed)", "pendingEvicted": "\(statistics.pendingEvicted)",
            "joinsRateLimited": "\(statistics.joinsRateLimited)",
        ]
        if statistics.cluster != RelayClusterStatistics() {
            let cluster = statistics.cluster
            metadata["cluster.published"] = "\(cluster.messagesPublished)"
            metadata["cluster.received"] = "\(cluster.messagesReceived)"
            metadata["cluster.lost"] = "\(cluster.messagesLost)"
        }
        for (kind, count) in statistics.refusals where count > 0 { metadata["refused.\(kind)"] = "\(count)" }
        return metadata
    }
}
