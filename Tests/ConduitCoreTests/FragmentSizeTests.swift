import ConduitCore
import Testing

/// Fragments follow the link: messages queued after `setFragmentSize` are cut to it (the engines
/// set it from `TransportLink.currentMTU` every pump round, so a path search that finds larger
/// packets means fewer, larger frames), never below the configured size.
@Suite struct FragmentSizeTests {
    @Test("messages queued after setFragmentSize are cut to it, never below the configured size; the receiver takes each whole")
    func messagesAreCutToTheSizeInUse() {
        var harness = CallHarness.connected(a: CallConfiguration(fragmentSize: 1_000, rateLimit: .unlimited))
        harness.open(mainStream, .reliableMessage)
        harness.clearEvents()
        let messages = (0..<3).map { index in (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) } }
        var frames: [Int] = []
        for (index, size) in [nil, 4_000, 10].enumerated() {
            if let size { harness.a.sessions.setFragmentSize(size) }
            let before = harness.sentAtoB
            #expect(harness.a.enqueue(mainStream, bytes: messages[index], timestamp: UInt64(index), now: harness.now) == .queued(messageID: UInt32(index)))
            harness.pump()
            frames.append(harness.sentAtoB - before)
        }
        // 10,000 bytes in fragments of 1,000, then of 4,000, then of 1,000 again (the floor).
        #expect(frames == [10, 3, 10])
        #expect(harness.takeEventsB().deliveries.map(\.bytes) == messages)
    }
}
