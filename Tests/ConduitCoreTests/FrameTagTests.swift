import ConduitCore
import Testing

// The tags the call machine writes with its frames: the link below reads them instead of parsing
// the frames (channel per data session, the session type's delivery, the goodbye a barrier).

@Suite struct FrameTagTests {
    /// Every datagram `machine` writes at `now`, with its tag.
    func transmit(_ machine: inout CallMachine, now: ConduitInstant) -> [(frame: [UInt8], tag: FrameTag)] {
        var batch = DatagramBatch()
        machine.pollTransmit(now: now, into: &batch)
        return (0..<batch.count).map { (batch[$0], batch.tag(at: $0)) }
    }

    func control(_ frame: [UInt8]) -> ControlFrame? { try? ControlFrame.parse(frame) }

    func dataHeader(_ frame: [UInt8]) -> DataFrameHeader? {
        frame.withUnsafeBytes { (try? DataFrameHeader.parse($0))?.0 }
    }

    @Test func eachSessionRidesItsOwnChannelWithItsTypesDelivery() {
        var harness = CallHarness.connected(a: .init(rateLimit: .unlimited))
        let sessions: [(SessionKey, SessionType, UInt32)] = [
            (SessionKey(streamID: 100), .reliableMessage, 100),
            (SessionKey(streamID: 101), .unreliableMessage, 101),
            (SessionKey(streamID: 102), .reliableBytes, 102),
            (SessionKey(streamID: 103, subgroup: "team"), .unreliableBytes, 1 << 16 | 103),
        ]
        for (key, type, _) in sessions {
            #expect(harness.a.makeOutbound(key, type: type, now: harness.now) == DataSessionFailReason.none)
            #expect(harness.a.enqueue(key, bytes: [1, 2, 3], timestamp: 0, now: harness.now) == .queued(messageID: 0))
        }
        let written = transmit(&harness.a, now: harness.now)
        for (key, type, channel) in sessions {
            let open = written.first { if case .sessionOpen(key.streamID, _, _, type)? = control($0.frame) { true } else { false } }
            #expect(open?.tag == FrameTag(channel: channel, delivery: .reliableOrdered), "\(key): its open goes on its channel, reliably and in order")
            let data = written.filter { dataHeader($0.frame)?.streamID == key.streamID }
            #expect(data.count == 1)
            #expect(data.first?.tag == FrameTag(channel: channel, delivery: .for(type)), "\(key): its data has the \(type) delivery")
        }
        #expect(Reliability.for(.unreliableMessage) == Reliability(ordered: false, limit: .maxRetransmits(0)))
    }

    @Test func helloIsNeutralAndGoodbyeIsABarrier() {
        var machine = CallMachine(localPeer: "alice")
        let hello = transmit(&machine, now: .zero)
        #expect(hello.count == 1)
        #expect(hello.first?.tag == .neutral)
        machine.hangUp()
        let goodbye = transmit(&machine, now: .zero)
        #expect(goodbye.count == 1)
        #expect(goodbye.first.map { control($0.frame) } == .goodbye)
        #expect(goodbye.first?.tag == FrameTag(channel: FrameTag.controlChannel, delivery: .reliableOrdered, isBarrier: true))
    }

    @Test func aSessionsCloseAndUnsupportRideItsChannel() {
        var harness = CallHarness.connected(a: .init(rateLimit: .unlimited))
        let key = SessionKey(streamID: 120, subgroup: "team")
        #expect(harness.a.makeOutbound(key, type: .unreliableMessage, now: harness.now) == DataSessionFailReason.none)
        harness.pump()
        harness.a.closeOutbound(key)
        let close = transmit(&harness.a, now: harness.now)
        #expect(close.count == 1)
        #expect(close.first?.tag == FrameTag(channel: 1 << 16 | 120, delivery: .reliableOrdered))
        // bob declines alice's stream: on the channel alice's subgroup number names.
        harness.b.unsupportInbound(key)
        let refusal = transmit(&harness.b, now: harness.now)
        #expect(refusal.count == 1)
        #expect(refusal.first.map { control($0.frame) } == .sessionUnsupported(streamID: 120, subgroupID: 1))
        #expect(refusal.first?.tag == FrameTag(channel: 1 << 16 | 120, delivery: .reliableOrdered))
    }

    @Test func untaggedBatchesCarryNoTagsAndMixedOnesStayParallel() {
        var batch = DatagramBatch()
        batch.append([1])
        batch.append([2])
        #expect(batch.tags.isEmpty)
        #expect(batch.tag(at: 1) == .neutral)
        batch.tag(from: 0, as: .neutral)
        #expect(batch.tags.isEmpty, "tagging with the neutral tag stores nothing")
        let track = FrameTag(channel: FrameTag.trackChannel(7), delivery: Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 500)))
        batch.append([3], tag: track)
        batch.append([4])
        #expect(batch.tags == [.neutral, .neutral, track, .neutral])
        #expect(track.withRemainingLifetime(milliseconds: 200).delivery.limit == .maxPacketLifeTime(milliseconds: 200))
        #expect(FrameTag.farewell.withRemainingLifetime(milliseconds: 200) == .farewell)

        var combined = DatagramBatch()
        combined.append([0])
        combined.append(contentsOf: batch)
        #expect(combined.count == 5)
        #expect((0..<5).map { combined.tag(at: $0) } == [.neutral, .neutral, .neutral, track, .neutral])
        var untagged = DatagramBatch()
        untagged.append([9])
        combined.append(contentsOf: untagged)
        #expect(combined.tags.count == 6)
        combined.removeAll()
        #expect(combined.tags.isEmpty)
        combined.append([5])
        #expect(combined.tag(at: 0) == .neutral)
    }

    /// A datagram written in place (as the reliability engine builds its packets) keeps the tags
    /// parallel too: untagged, and the tags after it belong to the right datagrams.
    @Test func aDatagramWrittenInPlaceKeepsTheTagsParallel() {
        let track = FrameTag(channel: FrameTag.trackChannel(3), delivery: .reliableOrdered)
        var batch = DatagramBatch()
        batch.append([1], tag: track)
        batch.appendInPlace { storage in
            storage.append(contentsOf: [2, 2])
            return true
        }
        batch.appendInPlace { storage in
            storage.append(9)
            return false
        }
        batch.append([3], tag: .farewell)
        #expect(batch.count == 3)
        #expect((0..<3).map { batch[$0] } == [[1], [2, 2], [3]])
        #expect((0..<3).map { batch.tag(at: $0) } == [track, .neutral, .farewell])
    }
}
