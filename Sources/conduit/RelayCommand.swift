import ArgumentParser
import Conduit
import ConduitRelay
import Logging
import Metrics
import ServiceLifecycle
import ConduitRooms
import ConduitRelayCore
import Foundation
import ConduitTooling
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
        name: .customLong("overload-burst"),
        help: "udp:// listeners: datagrams read in one burst at which a listener takes itself for overloaded and leaves new handshakes unanswered for 100 ms (above 128: never)."
    )
    var overloadBurst = UDPTransport.Configuration.ListenerLimits().overloadBurst

    @Option(
        name: .customLong("cluster-timeout"),
        help: "Seconds after which a relay of the cluster heard nothing from is taken for dead: its members are reported left here (at least twice the heartbeat)."
    )
    var clusterTimeout: Double = 4

    @Option(name: .customLong("cluster-heartbeat"), help: "Seconds between this relay's announcements of its members to the cluster.")
    var clusterHeartbeat: Double = 1

    @Option(
        name: .customLong("threads"),
        help: "Shards, one per core the relay uses (default 'cores': one per CPU it may run on): each runs its own rooms' state on its own actor, links are spread over them, and a room whose members sit on different shards is held together as a cluster in memory (peer lists, routing, subgroups, tracks, channels, backpressure, invitations and online status). Fewer than the CPUs it may run on: the process is also confined to that many CPUs, so that N is what it uses."
    )
    var threads: String = "cores"

    @Option(
        name: .customLong("log-level"),
        help: "Log level on standard error (trace, debug, info, notice, warning, error, critical); at debug the transports' link lifecycle too."
    )
    var logLevel: String = "info"

    func run() async throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one URL to listen on") }
        guard statsInterval > 0, statsInterval <= 86_400 else { throw ValidationError("--stats-interval must be in (0, 86400]") }
        guard maxMembers > 0, maxMembers < 65_000 else { throw ValidationError("--max-members must be 1...64999") }
        guard clusterHeartbeat >= 0.05, clusterHeartbeat <= 3_600 else { throw ValidationError("--cluster-heartbeat must be in [0.05, 3600]") }
        guard clusterTimeout >= 2 * clusterHeartbeat, clusterTimeout <= 86_400 else {
            throw ValidationError("--cluster-timeout must be at least twice --cluster-heartbeat, and at most 86400")
        }
        var listenerLimits = UDPTransport.Configuration.ListenerLimits()
        listenerLimits.maxLinksPerAddress = maxLinksPerAddress
        listenerLimits.handshakesPerSecondPerAddress = handshakesPerAddress
        listenerLimits.handshakesPerSecond = handshakesPerSecond
        listenerLimits.overloadBurst = overloadBurst
        try ReportOutput.checked { () throws(ConduitError) in try listenerLimits.validate() }
        let secret = try RelaySecretFile.load(secretFile)
        let transports = try CommandLogging.logger(level: logLevel)
        var logger = Logger(label: "conduit.relay")
        logger.logLevel = transports?.logLevel ?? .info
        let cpus = CPUAffinity.allowed()?.count ?? ProcessInfo.processInfo.activeProcessorCount
        guard let threads = self.threads == "cores" ? cpus : Int(self.threads), threads > 0, threads <= 1_024 else {
            throw ValidationError("--threads must be 1...1024 or 'cores'")
        }
        if threads < cpus, let confined = CPUAffinity.confine(to: threads) {
            logger.info("confined to CPUs", metadata: ["cpus": "\(confined)"])
        }
        let server = RelayShardGroup(
            threads: threads,
            authority: RelayTokenAuthority(secret: secret),
            configuration: RelayConfiguration(maxMembersPerRoom: maxMembers),
            registry: CommandRegistry.make(logger: transports, reusePort: threads > 1, listenerLimits: listenerLimits)
        )
        // Before listening: with several shards, each joins the cluster itself.
        if let cluster {
            let liveness = RelayClusterLiveness(
                heartbeatInterval: .milliseconds(Int64(clusterHeartbeat * 1_000)), silenceTimeout: .milliseconds(Int64(clusterTimeout * 1_000)))
            try await server.joinCluster(cluster, liveness: liveness)
            let noRoster = await server.clusterRosterUnavailable
            ReportOutput.printNow("relay joined the cluster at \(cluster) (\(noRoster.map { "no roster: \($0); member numbers and peer-list versions are this relay's own" } ?? "roster: one numbering and one peer-list version on every relay"))")
            logger.info("joined cluster", metadata: ["url": "\(cluster)"])
        }
        for url in urls {
            let bound = try await server.listen(on: url)
            ReportOutput.printNow("relay listening on \(bound)")
            let spread = await server.spread
            logger.info("listening", metadata: ["url": "\(bound)", "threads": "\(threads)", "spread": "\(spread)"])
        }
        let service = RelayService(server: server, logger: logger, interval: .milliseconds(Int64(statsInterval * 1_000)))
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}

/// The relay as a swift-service-lifecycle service: runs until graceful shutdown, publishing its
/// counters meanwhile, then shuts the relay down (members are told, links closed).
struct RelayService: Service {
    let server: RelayShardGroup
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
        Gauge(label: "conduit_relay_frames_after_isolation").record(statistics.framesAfterIsolation)
        Gauge(label: "conduit_relay_isolated_reads_cut_short").record(statistics.isolatedReadsCutShort)
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
            "framesAfterIsolation": "\(statistics.framesAfterIsolation)", "isolatedReadsCutShort": "\(statistics.isolatedReadsCutShort)",
            "joinDeadlinesMissed": "\(statistics.joinDeadlinesMissed)", "pendingEvicted": "\(statistics.pendingEvicted)",
            "joinsRateLimited": "\(statistics.joinsRateLimited)",
        ]
        if statistics.cluster != RelayClusterStatistics() {
            let cluster = statistics.cluster
            metadata["cluster.published"] = "\(cluster.messagesPublished)"
            metadata["cluster.received"] = "\(cluster.messagesReceived)"
            metadata["cluster.lost"] = "\(cluster.messagesLost)"
            // The node stream (online status, invitations): what was lost beyond repair, and
            // forwarded answers that went unanswered (their peers were refused relayUnavailable).
            metadata["cluster.nodeLost"] = "\(cluster.nodeMessagesLost)"
            metadata["cluster.nodeRepaired"] = "\(cluster.nodeMessagesRepaired)"
            metadata["cluster.invitationsUnanswered"] = "\(cluster.invitationRequestsUnanswered)"
            metadata["cluster.pressure"] = "\(cluster.remotePressureApplied)"
        }
        for (kind, count) in statistics.refusals where count > 0 { metadata["refused.\(kind)"] = "\(count)" }
        return metadata
    }
}
