#if SCTP
import ConduitCore
@testable import ConduitSCTP
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// What the loop makes reaches the awaiting task through ``SCTPHandOff``. The case that matters is
/// the one a fresh CI run failed on: the loop resumes the task before the task has suspended (the
/// runtime's fast path, which ThreadSanitizer does not see). Forced here by spinning inside the
/// continuation's closure until the loop has resumed it; under ThreadSanitizer (Scripts/sanitizers.sh) the reads of what the
/// loop initialized are reported as races unless the hand-off is published and observed.
@Suite("SCTP hand-off from the loop to a task")
struct SCTPHandOffTests {
    final class Made: Sendable {
        let number: Int
        let text: String
        init(_ number: Int) {
            self.number = number
            text = "made on the loop: \(number)"
        }
    }

    @Test("a value made on the loop and resumed before the task suspends arrives intact, the hand-off visible")
    func resumedBeforeTheTaskSuspends() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let handOff = SCTPHandOff()
        for number in 0..<50 {
            // Relaxed: it orders nothing for ThreadSanitizer, so only the hand-off can.
            let resumed = Atomic<Bool>(false)
            let made: Made = await withUnsafeContinuation { continuation in
                loop.execute {
                    let made = Made(number)
                    handOff.publish()
                    continuation.resume(returning: made)
                    resumed.store(true, ordering: .relaxed)
                }
                // Until the loop has resumed it (at most 1 s): the task then takes the fast path.
                let start = ContinuousClock.now
                while !resumed.load(ordering: .relaxed), ContinuousClock.now - start < .seconds(1) {}
            }
            handOff.observe()
            #expect(made.number == number && made.text == "made on the loop: \(number)")
        }
        try await group.shutdownGracefully()
    }

    @Test("value(of:) hands over a future's value, and its failure as the ConduitError the loop made")
    func futuresThroughTheHandOff() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let handOff = SCTPHandOff()
        let made = try await handOff.value(of: loop.submit { Made(7) })
        #expect(made.text == "made on the loop: 7")
        let failing = loop.makeFailedFuture(ConduitError(.sessionClosed, "closed on the loop")) as EventLoopFuture<Made>
        await #expect(throws: ConduitError(.sessionClosed, "closed on the loop")) {
            _ = try await handOff.value(of: failing, orFailWith: .connectionClosed, "not this")
        }
        let nioFailure = loop.makeFailedFuture(ChannelError.ioOnClosedChannel) as EventLoopFuture<Made>
        await #expect {
            _ = try await handOff.value(of: nioFailure, orFailWith: .connectionClosed, "writing failed")
        } throws: { error in
            (error as? ConduitError)?.code == .connectionClosed && "\(error)".contains("writing failed")
        }
        try await group.shutdownGracefully()
    }
}
#endif
