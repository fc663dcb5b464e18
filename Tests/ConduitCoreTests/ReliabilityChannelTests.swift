import ConduitCore
import ConduitARQ
import Testing

@Suite("Reliable link: channels and windows")
struct ReliabilityChannelTests {
    /// A frame too large for what is left of the peer's window waits, but a smaller frame on
    /// another channel still goes: one channel never blocks another, and the link never claims it
    /// can send (`nextDeadline == now`) while sending nothing (which once made its driver spin).
    @Test func aFrameThatDoesNotFitThePeersWindowDoesNotBlockOtherChannels() {
        var configuration = ARQEngine.Configuration()
        let full = configuration.maxFramePayload
        configuration.receiveWindow = 2 * (full + ARQEngine.frameOverhead)
        var link = ARQEngine(configuration: configuration, now: .zero)
        for _ in 0..<2 { _ = link.send([UInt8](repeating: 1, count: full), channel: 1, now: .zero) }
        for _ in 0..<3 { _ = link.send([UInt8](repeating: 2, count: 10), channel: 2, now: .zero) }

        var batch = DatagramBatch()
        link.pollTransmit(now: .zero, into: &batch)
        // Channel 1's first frame and all of channel 2 fit the window; channel 1's second does not.
        let sentBeforeWindowOpens = link.statistics.framesSent
        #expect(sentBeforeWindowOpens == 4)
        #expect(link.outstandingBytes == full + ARQEngine.frameOverhead + 3 * (10 + ARQEngine.frameOverhead))
        // Nothing more may go until an ACK opens the window: no deadline at `now`.
        if let next = link.nextDeadline(now: .zero) { #expect(next > .zero) }
        batch.removeAll()
        #expect(link.pollTransmit(now: .zero, into: &batch) == 0)
    }
}
