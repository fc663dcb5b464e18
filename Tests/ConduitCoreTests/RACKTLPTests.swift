import ConduitCore
import ConduitARQ
import Testing

// RACK-TLP (RFC 8985): a loss the network disproves (section 6.2 step 4) and a lost tail
// (section 7), packet by packet on virtual time: the test carries each datagram between two
// engines itself.

@Suite("Reliable link: RACK-TLP loss detection")
struct RACKTLPTests {
    /// Datagrams `side` wants to send at `now`.
    static func transmit(_ side: inout ARQEngine, now: ConduitInstant) -> [[UInt8]] {
        var batch = DatagramBatch(reservingBytes: 64 * 1_232, datagrams: 64)
        side.pollTransmit(now: now, into: &batch)
        return (0..<batch.count).map { batch[$0] }
    }

    /// Packet 2 of 8 is held back past the others: the sender declares it lost (three later
    /// packets acknowledged, no reordering seen yet) and halves its window. When packet 2 arrives
    /// after all and is acknowledged, the loss is counted as spurious, the window reduction is
    /// undone, the frame's retransmission never goes out, and the receiver gets all 8 frames once,
    /// in order.
    @Test func aLossTheNetworkDisprovesIsUndone() {
        // The halved window and its undo are NewReno's (BBR does not shrink its window for one loss).
        var newReno = ARQEngine.Configuration()
        newReno.congestionControl = .newReno
        var a = ARQEngine(configuration: newReno, now: .zero)
        var b = ARQEngine(now: .zero)
        var now = ConduitInstant.zero
        let frames = (0..<8).map { [UInt8](repeating: UInt8($0), count: 1_000) }
        for frame in frames { _ = a.send(frame, channel: 1, now: now) }
        let packets = Self.transmit(&a, now: now)
        #expect(packets.count == 8)

        // Packets 0 and 1 arrive 40 ms later; B acknowledges the second at once.
        now = now + .milliseconds(40)
        for packet in packets[0...1] { b.handle(datagram: packet, now: now) }
        let firstAcks = Self.transmit(&b, now: now)
        #expect(firstAcks.count == 1)
        // Packets 3...7 overtake packet 2.
        now = now + .milliseconds(1)
        for packet in packets[3...] { b.handle(datagram: packet, now: now) }
        let secondAcks = Self.transmit(&b, now: now)
        #expect(secondAcks.count == 1)

        now = now + .milliseconds(39)
        for ack in firstAcks { a.handle(datagram: ack, now: now) }
        let windowBeforeLoss = a.congestionWindow
        now = now + .milliseconds(1)
        for ack in secondAcks { a.handle(datagram: ack, now: now) }
        let afterLoss = a.statistics
        #expect(afterLoss.packetsLost == 1)
        #expect(afterLoss.congestionEvents == 1)
        #expect(afterLoss.spuriousRetransmissions == 0)
        let reducedWindow = a.congestionWindow
        #expect(reducedWindow < windowBeforeLoss)

        // Packet 2 arrives after all, before A sent its frame again.
        now = now + .milliseconds(2)
        b.handle(datagram: packets[2], now: now)
        let lateAcks = Self.transmit(&b, now: now)
        #expect(lateAcks.count == 1)
        now = now + .milliseconds(40)
        for ack in lateAcks { a.handle(datagram: ack, now: now) }
        let afterUndo = a.statistics
        #expect(afterUndo.spuriousRetransmissions == 1)
        #expect(afterUndo.congestionEventsUndone == 1)
        #expect(afterUndo.slowStartThreshold == Int.max, "back in slow start, as before the loss")
        #expect(a.congestionWindow >= windowBeforeLoss)
        #expect(a.congestionWindow > reducedWindow)
        #expect(a.framesOutstanding == 0)

        // Nothing is left to send again, and B delivers each frame once, in order.
        #expect(Self.transmit(&a, now: now).isEmpty)
        #expect(a.statistics.framesRetransmitted == 0)
        var delivered: [[UInt8]] = []
        while let frame = b.pollDelivery(now: now) { delivered.append(frame.bytes) }
        #expect(delivered == frames)
    }

    /// After one spurious loss, reordering of the same depth is waited out: the reordering window
    /// (a quarter of the minimum RTT at least) covers it, so nothing more is declared lost.
    @Test func reorderingOnceSeenIsWaitedOut() {
        var a = ARQEngine(now: .zero)
        var b = ARQEngine(now: .zero)
        var now = ConduitInstant.zero
        var sentFrames = 0
        for round in 0..<2 {
            for _ in 0..<8 {
                _ = a.send([UInt8](repeating: UInt8(sentFrames & 0xFF), count: 500), channel: 1, now: now)
                sentFrames += 1
            }
            let packets = Self.transmit(&a, now: now)
            #expect(packets.count == 8)
            // Every packet but the third arrives 40 ms later; the third 5 ms after the rest, and
            // the acknowledgements take 40 ms back.
            now = now + .milliseconds(40)
            var acks: [[UInt8]] = []
            for (index, packet) in packets.enumerated() where index != 2 {
                b.handle(datagram: packet, now: now)
                acks += Self.transmit(&b, now: now)
            }
            now = now + .milliseconds(5)
            b.handle(datagram: packets[2], now: now)
            let lateAcks = Self.transmit(&b, now: now)
            now = now + .milliseconds(35)
            for ack in acks { a.handle(datagram: ack, now: now) }
            if round == 0 {
                #expect(a.statistics.packetsLost == 1, "no reordering seen yet: three later packets acknowledged declare it lost")
            } else {
                #expect(a.statistics.packetsLost == 1, "the reordering window covers the 5 ms")
            }
            now = now + .milliseconds(5)
            for ack in lateAcks { a.handle(datagram: ack, now: now) }
            // What the engines still owe (a retransmission in round 0 never goes: its frame was
            // acknowledged), and a pause.
            for packet in Self.transmit(&a, now: now) { b.handle(datagram: packet, now: now) }
            for packet in Self.transmit(&b, now: now) { a.handle(datagram: packet, now: now) }
            now = now + .milliseconds(100)
        }
        #expect(a.statistics.spuriousRetransmissions == 1)
        #expect(a.statistics.framesRetransmitted == 0)
        var delivered = 0
        while b.pollDelivery(now: now) != nil { delivered += 1 }
        #expect(delivered == sentFrames)
    }

    /// The last packet of a flight is lost: no later packet can reveal it, so the tail loss
    /// probe (RFC 8985 section 7) goes first, one packet repeating the oldest frame in flight;
    /// its acknowledgement lets RACK declare the tail lost, with no backed-off timeout on the way.
    @Test func aLostTailIsRepairedByOneProbe() {
        var a = ARQEngine(now: .zero)
        var b = ARQEngine(now: .zero)
        var now = ConduitInstant.zero
        var sent: [[UInt8]] = []
        func write(_ count: Int) {
            for _ in 0..<count {
                sent.append([UInt8](repeating: UInt8(sent.count), count: 300))
                _ = a.send(sent[sent.count - 1], channel: 1, now: now)
            }
        }
        // One frame there and back first, for an RTT sample; B's delayed ACK goes when its timer runs out.
        write(1)
        let first = Self.transmit(&a, now: now)
        now = now + .milliseconds(40)
        for packet in first { b.handle(datagram: packet, now: now) }
        now = now + b.configuration.maxAckDelay
        b.handleTimeout(now: now)
        let firstAck = Self.transmit(&b, now: now)
        #expect(firstAck.count == 1)
        now = now + .milliseconds(40)
        for ack in firstAck { a.handle(datagram: ack, now: now) }

        // Four frames; the last packet is lost.
        write(4)
        let flight = Self.transmit(&a, now: now)
        #expect(flight.count == 4)
        let flightSent = now
        now = now + .milliseconds(40)
        for packet in flight.dropLast() { b.handle(datagram: packet, now: now) }
        var acks = Self.transmit(&b, now: now)
        now = now + b.configuration.maxAckDelay
        b.handleTimeout(now: now)
        acks += Self.transmit(&b, now: now)
        now = now + .milliseconds(40)
        for ack in acks { a.handle(datagram: ack, now: now) }
        #expect(a.statistics.packetsLost == 0, "nothing sent after the tail was acknowledged")
        #expect(a.unackedPacketCount == 1)

        // The next timer is the probe, before RFC 9002's PTO would be.
        guard let probeAt = a.nextDeadline(now: now) else {
            Issue.record("no timer while a packet is in flight")
            return
        }
        #expect(probeAt > now)
        #expect(probeAt - flightSent <= a.smoothedRtt * 2 + .milliseconds(50))
        now = probeAt
        a.handleTimeout(now: now)
        let probes = Self.transmit(&a, now: now)
        #expect(probes.count == 1, "a tail loss probe is one packet")
        #expect(a.statistics.probeTimeouts == 1)
        now = now + .milliseconds(40)
        for packet in probes { b.handle(datagram: packet, now: now) }
        let probeAcks = Self.transmit(&b, now: now)
        now = now + .milliseconds(40)
        for ack in probeAcks { a.handle(datagram: ack, now: now) }

        let statistics = a.statistics
        #expect(statistics.packetsLost == 1, "RACK declares the tail lost once the probe sent after it is acknowledged")
        #expect(statistics.framesRetransmitted == 1)
        #expect(statistics.spuriousRetransmissions == 0)
        #expect(a.framesOutstanding == 0)
        var delivered: [[UInt8]] = []
        while let frame = b.pollDelivery(now: now) { delivered.append(frame.bytes) }
        #expect(delivered == sent)
    }
}
