import Foundation
import Testing

/// `conduit bench --room` with several senders: each also gets the others' messages. A suite of
/// its own so that Scripts/test.sh runs it alone (Scripts/suites.sh: `heavy`): 32,000 deliveries
/// and 48,000 more to the senders, through a relay process, take a few seconds when nothing
/// else runs.
@Suite("conduit bench --room, several senders")
struct BenchRoomSendersTests {
    /// Under Scripts/sanitizers.sh (it sets TSAN_OPTIONS or ASAN_OPTIONS for the suite, and the
    /// relay child inherits them) the room forwards about 1,000 messages a second: this one
    /// would not end in its time (ThreadSanitizer: 20,636 of 32,000 in 19 s).
    static let underSanitizer = ["TSAN_OPTIONS", "ASAN_OPTIONS"].contains { ProcessInfo.processInfo.environment[$0] != nil }

    @Test("4 senders to 2 receivers, 4,000 × 1 KiB each: every delivery exactly once and in order; the senders take each other's messages, so none is isolated as a slow receiver",
          .enabled(if: BenchRoomTests.conduit != nil, "needs the conduit executable beside the test bundle (swift build --build-tests builds it)"),
          .enabled(if: !underSanitizer, "too slow under a sanitizer (see underSanitizer)"),
          .timeLimit(.minutes(2)))
    func severalSenders() async throws {
        // Before the senders read, the last of them was isolated here (each got 12 MB it never
        // took) and the relay refused the rest of its messages as notJoined: 2 runs of 2 failed.
        let report = try await BenchRoomTests.run(relays: 1, senders: 4, receivers: 2, messages: 4_000, size: 1_024)
        #expect(report.expected == 32_000)
        #expect(report.isComplete, "\(report)")
        #expect(report.ended == "complete")
    }
}
