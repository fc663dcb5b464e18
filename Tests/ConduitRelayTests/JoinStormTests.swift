import ConduitCore
import ConduitRelay
import ConduitTooling
import Testing

/// The join-storm generator (`JoinStorm`, `conduit bench --join-storm`) against a relay in this
/// process, small and slow enough that every attempt is answered: each is a real link at the
/// listener, its join is read by the relay and refused, and the generator reads that refusal.
@Suite("Join storm generator", .timeLimit(.minutes(1)))
struct JoinStormTests {
    @Test("every attempt becomes a link whose bad-token join the relay refuses, and the generator reads each refusal")
    func everyAttemptIsALinkAndRefused() async throws {
        let rig = try await RelayAbuseUDPTests.Rig.start()
        var options = JoinStorm.Options(port: rig.url.port!)
        options.attemptsPerSecond = 100
        options.duration = .seconds(1)
        options.sockets = 128  // every attempt of the second can be in flight at once
        options.answerTimeout = .seconds(10)
        let report = try await JoinStorm.run(options)
        let statistics = await rig.server.statistics
        #expect(report.attempts > 0)
        #expect(report.deferred == 0)
        #expect(report.cookies == report.attempts)
        #expect(report.accepts == report.attempts)
        #expect(report.joinsSent == report.attempts)
        #expect(report.refusals == ["tokenMalformed": report.attempts])
        #expect(statistics.refusals(.tokenMalformed) == report.attempts)
        #expect(statistics.joins == 0)
        await rig.stop(closing: [])
    }
}
