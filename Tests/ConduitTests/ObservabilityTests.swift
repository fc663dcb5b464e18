import Conduit
import CoreMetrics
import ConduitLogCapture
import Logging
import MetricsTestKit
import Synchronization
import ConduitTesting
import Testing

/// Logging and metrics: what a runtime given a logger and a metrics factory reports about a call,
/// and that a runtime given nothing reports nothing, not even through the global systems.
@Suite("Observability")
struct ObservabilityTests {
    @Test("a call logs its lifecycle with call and peer metadata, and its counters match what was sent and received")
    func injectedLoggerAndMetrics() async throws {
        let global = GlobalObservation.shared
        let logs = LogCapture()
        let metrics = TestMetrics()
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults, logger: logs.logger(), metricsFactory: metrics)
        let pair = try await ObservedPair.connect("observability-injected", runtime: runtime)

        // Messages one way, and one back, of sizes that span several fragments.
        let (outbound, inbound) = try await pair.open(321, .reliableMessage, from: pair.caller, to: pair.callee)
        var generator = SplitMix64(seed: 321)
        let sizes = (0..<40).map { _ in generator.logUniformSize(max: 20 * 1024) }
        for (index, size) in sizes.enumerated() { try await outbound.send(generator.bytes(size), timestamp: UInt64(index)) }
        var received = 0
        while received < sizes.count {
            let event = try #require(try await next(inbound, "message \(received)"))
            #expect(event.message?.bytes.count == sizes[received])
            received += 1
        }
        let (reply, replyIn) = try await pair.open(322, .reliableMessage, from: pair.callee, to: pair.caller)
        try await reply.send(Array("ack".utf8), timestamp: 9)
        #expect(try await next(replyIn, "the reply")?.message?.bytes == Array("ack".utf8))
        try await pair.finish()

        // Lifecycle logs, each carrying the call's metadata.
        let entries = logs.entries
        let connected = entries.filter { $0.message == "call connected" }
        try #require(connected.count == 2)
        #expect(connected.allSatisfy { $0.level == .info && $0.metadata["conduit.transport"] == "loopback" })
        #expect(Set(connected.compactMap { $0.metadata["conduit.peer"] }) == ["alice", "bob"])
        #expect(Set(connected.compactMap { $0.metadata["conduit.local"] }) == ["alice", "bob"])
        for entry in connected { #expect(entry.metadata["conduit.peer"] != entry.metadata["conduit.local"]) }
        let callerID = try #require(connected.first { $0.metadata["conduit.local"] == "alice" }?.metadata["conduit.call"])
        let calleeID = try #require(connected.first { $0.metadata["conduit.local"] == "bob" }?.metadata["conduit.call"])
        #expect(callerID.count == 8 && calleeID.count == 8 && callerID != calleeID)

        let opened = try #require(entries.first { $0.message == "outbound data session opened" && $0.metadata["conduit.stream"] == "321" })
        #expect(opened.level == .debug)
        #expect(opened.metadata["conduit.call"] == callerID)
        #expect(opened.metadata["conduit.peer"] == "bob")
        #expect(opened.metadata["conduit.type"] == "reliable-message")
        #expect(entries.contains { $0.message == "inbound data session opened" && $0.metadata["conduit.stream"] == "321" && $0.metadata["conduit.call"] == calleeID })

        let ended = entries.filter { $0.message == "call ended" }
        try #require(ended.count == 2)
        let callerEnd = try #require(ended.first { $0.metadata["conduit.call"] == callerID })
        #expect(callerEnd.level == .info)
        #expect(callerEnd.metadata["conduit.messagesSent"] == "\(sizes.count)")
        #expect(callerEnd.metadata["conduit.bytesSent"] == "\(sizes.reduce(0, +))")
        #expect(entries.contains { $0.message == "listening" && $0.metadata["conduit.local"] == "bob" })
        // Nothing per message: a handful of lines for a call that carried 41 messages.
        #expect(entries.count < sizes.count, "\(entries.map(\.message))")

        // Counters: exactly what went through, on each side.
        let call = [("transport", "loopback"), ("kind", "call")]
        let sent = Int64(sizes.reduce(0, +)) + 3
        #expect(metrics.counterTotal(label: "conduit_messages_sent_total", dimensions: call) == Int64(sizes.count) + 1)
        #expect(metrics.counterTotal(label: "conduit_messages_received_total", dimensions: call) == Int64(sizes.count) + 1)
        #expect(metrics.counterTotal(label: "conduit_bytes_sent_total", dimensions: call) == sent)
        #expect(metrics.counterTotal(label: "conduit_bytes_received_total", dimensions: call) == sent)
        #expect(metrics.counterTotal(label: "conduit_link_bytes_sent_total", dimensions: call) > sent)
        #expect(metrics.counterTotal(label: "conduit_link_bytes_received_total", dimensions: call) > sent)
        #expect(metrics.counterTotal(label: "conduit_drops_total", dimensions: call) == 0)
        #expect(metrics.counterTotal(label: "conduit_calls_total", dimensions: call) == 2)
        #expect(try metrics.expectMeter("conduit_calls_active", call).values.last == 0)
        #expect(try metrics.expectMeter("conduit_calls_active", call).values.max() ?? 0 >= 1)

        // And none of it went through the global systems.
        #expect(global.conduitLogs.isEmpty)
        #expect(global.conduitMetrics.isEmpty)
    }

    @Test("a runtime given no logger or factory reports nothing, not even to the bootstrapped global systems")
    func silentByDefault() async throws {
        let global = GlobalObservation.shared
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let pair = try await ObservedPair.connect("observability-silent", runtime: runtime)
        let (outbound, inbound) = try await pair.open(323, .unreliableMessage, from: pair.caller, to: pair.callee)
        try await outbound.send(Array("quiet".utf8), timestamp: 1)
        #expect(try await next(inbound, "the message")?.message?.bytes == Array("quiet".utf8))
        try await pair.finish()
        #expect(global.conduitLogs.isEmpty, "\(global.conduitLogs.map(\.message))")
        #expect(global.conduitMetrics.isEmpty, "\(global.conduitMetrics)")
    }

    @Test("a rate-capped sender's queueing delay is sampled, and the queue-delay alert is counted")
    func queueDelay() async throws {
        let metrics = TestMetrics()
        var configuration = ConduitConfiguration.testDefaults
        configuration.rateLimit = .bitsPerSecond(4_000_000)
        configuration.queueDelayOn = .milliseconds(100)
        configuration.queueDelayOff = .milliseconds(20)
        // On virtual time: the queue's delay is measured on the runtime's clock.
        let clock = VirtualClock()
        var runtime = ConduitRuntime(configuration: configuration, registry: .defaults)
        runtime.observability = ConduitObservability(metricsFactory: metrics)
        runtime.clock = clock
        let pair = try await ObservedPair.connect("observability-queue-delay", runtime: runtime)
        let (outbound, inbound) = try await pair.open(325, .reliableBytes, from: pair.caller, to: pair.callee)
        let fragments = EventRecorder(inbound.events)
        // 200 KB at 4 Mbit/s: 0.4 s to drain, so the queue waits well past 100 ms.
        let message = [UInt8](repeating: 7, count: 200_000)
        try await outbound.send(message, timestamp: 1)
        let receivedBytes: @Sendable () -> Int = { fragments.all.reduce(0) { $0 + ($1.fragment?.bytes.count ?? 0) } }
        #expect(await clock.advance(by: .milliseconds(10), until: { receivedBytes() == message.count }, limit: .seconds(5)))
        fragments.cancel()
        try await pair.finish()
        let call = [("transport", "loopback"), ("kind", "call")]
        let samples = try metrics.expectTimer("conduit_queue_delay", call).values
        #expect(!samples.isEmpty)
        #expect((samples.max() ?? 0) >= 100_000_000, "the longest sample: \(samples.max() ?? 0) ns")
        // The longest wait is the last fragment's: the whole 0.4 s, exactly as paced, on virtual time.
        #expect((samples.max() ?? 0) <= 500_000_000)
        #expect(metrics.counterTotal(label: "conduit_queue_delay_alerts_total", dimensions: call) >= 1)
        #expect(metrics.counterTotal(label: "conduit_bytes_received_total", dimensions: call) == Int64(message.count))
    }

    @Test("a logger's level is respected: at info, no debug lines")
    func loggerLevel() async throws {
        let logs = LogCapture()
        var logger = logs.logger()
        logger.logLevel = .info
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults, logger: logger)
        let pair = try await ObservedPair.connect("observability-info", runtime: runtime)
        _ = try await pair.open(324, .reliableBytes, from: pair.caller, to: pair.callee)
        try await pair.finish()
        let entries = logs.entries
        #expect(entries.allSatisfy { $0.level >= .info })
        #expect(entries.filter { $0.message == "call connected" }.count == 2)
        #expect(!entries.contains { $0.message.contains("data session") })
    }
}

// MARK: - Capturing logs

// MARK: - The global systems, bootstrapped once for this process

/// Bootstraps `LoggingSystem` and `MetricsSystem` once, so that anything the library sent through
/// them would be seen. Only entries that are the library's count: logs with `conduit.call`
/// metadata and metrics labelled `conduit_`.
final class GlobalObservation: Sendable {
    static let shared = GlobalObservation()

    let logs = LogCapture()
    let metrics = TestMetrics()

    private init() {
        let logs = logs
        LoggingSystem.bootstrap { _ in
            var handler = CapturingLogHandler(capture: logs)
            handler.logLevel = .trace
            return handler
        }
        MetricsSystem.bootstrap(metrics)
    }

    var conduitLogs: [LogEntry] { logs.entries.filter { $0.metadata.keys.contains { $0.hasPrefix("conduit.") } } }

    var conduitMetrics: [String] {
        let labels = metrics.counters.map(\.label) + metrics.meters.map(\.label) + metrics.recorders.map(\.label) + metrics.timers.map(\.label)
        return labels.filter { $0.hasPrefix("conduit_") }
    }
}

// MARK: - A call through a given runtime

struct ObservedPair {
    let listener: CallListener
    let caller: Call
    let callee: Call

    static func connect(_ name: String, runtime: ConduitRuntime) async throws -> ObservedPair {
        let url = "loopback://\(name)"
        let listener = try await runtime.listen(on: url, as: "bob")
        do {
            let (caller, callee) = try await within("the call to \(url) to connect") {
                async let accepted = listener.accept()
                let caller = try await runtime.connect(to: url, as: "alice")
                guard let callee = try await accepted else { throw ConduitError(.connectionFailed, "the listener closed") }
                return (caller, callee)
            }
            return ObservedPair(listener: listener, caller: caller, callee: callee)
        } catch {
            await listener.close()
            throw error
        }
    }

    func open(_ streamID: StreamID, _ type: SessionType, from sender: Call, to receiver: Call) async throws -> (OutboundDataSession, InboundDataSession) {
        let outbound = try await sender.makeOutboundDataSession(streamID: streamID, type: type)
        try await CallPair.awaitIncoming(streamID, type, on: receiver)
        let inbound = try await receiver.makeInboundDataSession(streamID: streamID, expecting: type)
        return (outbound, inbound)
    }

    func finish() async throws {
        let caller = caller, callee = callee, listener = listener
        try await within("the call to end") {
            await caller.hangUp()
            await callee.hangUp()
            await listener.close()
        }
    }
}
