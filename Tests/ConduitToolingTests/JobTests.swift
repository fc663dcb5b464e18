import Conduit
import ConduitTooling
import Synchronization
import Testing

extension ConduitRuntime {
    /// A runtime with a loopback hub of its own, the rate cap off, and the timers that could make
    /// a loaded machine's scheduling visible (unreliable reassembly timeout, queue delay events)
    /// pushed out of reach: the loopback loses nothing, so every count is exact.
    static func forToolingTests() -> ConduitRuntime {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.reassembly.incompleteTimeout = .seconds(3_600)
        configuration.queueDelayOn = .seconds(3_600)
        configuration.connectTimeout = .seconds(5)
        return ConduitRuntime(configuration: configuration, registry: .defaults)
    }
}

/// The URL a listen job reports before it accepts.
final class BoundURL: Sendable {
    private let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream(of: String.self) }

    var callback: @Sendable (String) -> Void { { [continuation] in continuation.yield($0) } }

    func next() async -> String? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }
}

@Suite("Listen and send jobs on loopback", .timeLimit(.minutes(1)))
struct JobTests {
    @Test(arguments: SessionType.allCases)
    func echoRoundTripIsExact(type: SessionType) async throws {
        let runtime = ConduitRuntime.forToolingTests()
        let bound = BoundURL()
        let listen = ListenJob(
            runtime: runtime, url: "loopback://tooling-echo-\(type.name)",
            options: .init(echo: true, expect: 200, timeout: .seconds(15))
        )
        async let listened = listen.run(onListening: bound.callback)
        let url = try #require(await bound.next())
        #expect(url == "loopback://tooling-echo-\(type.name)")

        let send = SendJob(runtime: runtime, options: .init(
            url: url, streamID: 321, type: type, count: 200, sizes: 1...16_384, label: "#bench", protocolName: "seeded",
            seed: 0xC0FFEE, verifyEcho: true, timeout: .seconds(15)
        ))
        let sent = try await send.run()
        let report = try await listened

        #expect(sent.sent == 200)
        #expect(sent.echoed == 200)
        #expect(sent.echoMismatches == 0)
        #expect(sent.echoDuplicates == 0)
        #expect(!sent.timedOut)
        #expect(sent.stream == 321)
        #expect(sent.type == type.name)
        #expect(sent.seed == 0xC0FFEE)
        #expect(sent.label == "#bench")
        #expect(sent.protocol == "seeded")
        #expect(sent.transport == "loopback")

        #expect(report.ended == .expected)
        #expect(report.received == 200)
        #expect(report.valid == 200)
        #expect(report.duplicates == 0)
        #expect(report.outOfOrder == 0)
        #expect(report.corrupted == 0)
        #expect(report.missing == 0)
        #expect(report.echoed == 200)
        #expect(report.bytes == sent.bytes)
        #expect(report.peer == "sender")
        #expect(report.transport == "loopback")
        let stream = try #require(report.streams["321"])
        #expect(stream.type == type.name)
        #expect(stream.received == 200)
        #expect(stream.echoed == 200)
        #expect(!stream.echoFailed)
    }

    @Test func sendWithoutEchoDeliversEverythingBeforeHangingUp() async throws {
        let runtime = ConduitRuntime.forToolingTests()
        let bound = BoundURL()
        let listen = ListenJob(runtime: runtime, url: "loopback://tooling-plain", options: .init(timeout: .seconds(15)))
        async let listened = listen.run(onListening: bound.callback)
        let url = try #require(await bound.next())
        let sent = try await SendJob(runtime: runtime, options: .init(
            url: url, streamID: 100, type: .reliableBytes, count: 50, sizes: 0...300_000, seed: 3, timeout: .seconds(15)
        )).run()
        let report = try await listened

        #expect(sent.sent == 50)
        #expect(sent.echoed == 0)
        #expect(!sent.timedOut)
        // No expectation: the listener ends when the caller hangs up, with every message drained.
        #expect(report.ended == .hangUp)
        #expect(report.received == 50)
        #expect(report.valid == 50)
        #expect(report.bytes == sent.bytes)
        #expect(report.corrupted == 0)
        #expect(report.missing == 0)
        #expect(report.expected == nil)
    }

    @Test func missingMessagesAreCountedAtTheTimeout() async throws {
        let runtime = ConduitRuntime.forToolingTests()
        let bound = BoundURL()
        let listen = ListenJob(
            runtime: runtime, url: "loopback://tooling-short",
            // Long enough that a loaded machine (the whole suite runs in parallel on 2 cores)
            // finishes the 30 sends before the listener gives up; the test waits it out.
            options: .init(expect: 50, timeout: .seconds(15))
        )
        async let listened = listen.run(onListening: bound.callback)
        let url = try #require(await bound.next())

        // A sender that stays on the call: only the listener's timeout ends the run.
        let call = try await runtime.connect(to: url, as: "sender")
        let session = try await call.makeOutboundDataSession(streamID: 500, type: .unreliableMessage)
        for seq in UInt32(0)..<30 {
            let message = SeededPayload.message(seed: 77, seq: seq, sizes: 1...2_000)
            try await session.send(message.bytes, timestamp: message.timestamp)
        }
        let report = try await listened
        await call.hangUp()

        #expect(report.ended == .timeout)
        #expect(report.expected == 50)
        #expect(report.received == 30)
        #expect(report.valid == 30)
        #expect(report.missing == 20)
        #expect(report.corrupted == 0)
        #expect(report.duplicates == 0)
    }

    @Test func aSenderThatHangsUpEarlyLeavesMissingMessages() async throws {
        let runtime = ConduitRuntime.forToolingTests()
        let bound = BoundURL()
        let listen = ListenJob(runtime: runtime, url: "loopback://tooling-early", options: .init(expect: 40, timeout: .seconds(15)))
        async let listened = listen.run(onListening: bound.callback)
        let url = try #require(await bound.next())
        let sent = try await SendJob(runtime: runtime, options: .init(
            url: url, streamID: 999, type: .reliableMessage, count: 25, sizes: 1...1, timeout: .seconds(15)
        )).run()
        let report = try await listened

        #expect(sent.sent == 25)
        #expect(sent.bytes == 25)
        #expect(report.ended == .hangUp)
        #expect(report.received == 25)
        #expect(report.missing == 15)
    }

    @Test func aListenerNobodyCallsReportsEverythingMissing() async throws {
        let listen = ListenJob(
            runtime: .forToolingTests(), url: "loopback://tooling-lonely",
            options: .init(expect: 10, timeout: .milliseconds(300))
        )
        let report = try await listen.run()
        #expect(report.ended == .timeout)
        #expect(report.peer == nil)
        #expect(report.received == 0)
        #expect(report.missing == 10)
    }

    @Test func anUnreachablePeerIsATypedError() async throws {
        let job = SendJob(runtime: .forToolingTests(), options: .init(url: "loopback://nobody-here", streamID: 100, type: .reliableMessage))
        let error = try #require(await error(of: job))
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("loopback://nobody-here"))
    }

    @Test func badOptionsAreRefusedBeforeConnecting() async throws {
        func options(stream: Int = 100, type: SessionType = .reliableMessage, count: Int = 1, sizes: ClosedRange<Int> = 1...1) -> SendJob.Options {
            .init(url: "loopback://nobody-here", streamID: StreamID(stream), type: type, count: count, sizes: sizes)
        }
        let runtime = ConduitRuntime.forToolingTests()
        #expect(try #require(await error(of: SendJob(runtime: runtime, options: options(stream: 99)))).code == .invalidStreamID)
        #expect(try #require(await error(of: SendJob(runtime: runtime, options: options(stream: 1_000)))).code == .invalidStreamID)
        #expect(try #require(await error(of: SendJob(runtime: runtime, options: options(count: -1)))).code == .invalidConfiguration)
        #expect(try #require(await error(of: SendJob(runtime: runtime, options: options(sizes: 1...(128 * 1024 + 1))))).code == .messageTooLarge)
    }

    private func error(of job: SendJob) async -> ConduitError? {
        do throws(ConduitError) {
            _ = try await job.run()
            return nil
        } catch {
            return error
        }
    }
}

@Suite("Jobs ending early", .timeLimit(.minutes(1)))
struct EarlyEndTests {
    @Test func aListenerThatStopsEarlyEndsTheSenderWithAClearError() async throws {
        var runtime = ConduitRuntime.forToolingTests()
        // A small queue under a slow cap: `send` waits for room, so the sender is still sending
        // (200 kB at 50 kB/s) when the listener has its 5 messages and hangs up.
        runtime.configuration.maxQueuedBytesPerSession = 2_000
        let bound = BoundURL()
        let listen = ListenJob(runtime: runtime, url: "loopback://tooling-stops-early", options: .init(expect: 5, timeout: .seconds(15)))
        async let listened = listen.run(onListening: bound.callback)
        let url = try #require(await bound.next())
        let job = SendJob(runtime: runtime, options: .init(
            url: url, streamID: 200, type: .reliableMessage, count: 2_000, sizes: 100...100,
            rate: .bitsPerSecond(400_000), timeout: .seconds(15)
        ))
        var thrown: ConduitError?
        do throws(ConduitError) { _ = try await job.run() } catch { thrown = error }
        let report = try await listened
        #expect(report.ended == .expected)
        #expect(report.valid >= 5)
        #expect(report.missing == 0)
        let error = try #require(thrown)
        #expect(error.code == .connectionClosed)
        #expect(error.message.contains("the peer ended the call"))
    }
}
