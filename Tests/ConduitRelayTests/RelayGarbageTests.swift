import ConduitCore
import ConduitImpairment
import ConduitRooms
import ConduitRelay
import Testing

/// Seeded garbage and bit-flipped valid frames at the relay and at a conference client: every
/// datagram is refused and counted or handled, nothing traps, nothing is relayed that should not be.
@Suite struct RelayGarbageTests {
    /// Valid frames of every relay kind, to mutate.
    static func samples(trackID: UInt16, channelID: UInt16) -> [[UInt8]] {
        let declaration = try! ChannelDeclaration(label: "#c", direction: .sendrecv, compress: true, senderHeader: true)
        var samples: [[UInt8]] = [
            RoomControlFrame.join(room: "room", peer: "x", dataSessionsSupported: true, token: Array("ct1.a.b".utf8)).encoded,
            RoomControlFrame.peers(PeerListUpdate(version: 3, isSnapshot: true, joined: [RoomMember(member: 1, peer: "a", dataSessionsSupported: true)], left: [2])).encoded,
            RoomControlFrame.subscribe("team", dataSession: true).encoded,
            RoomControlFrame.extension(id: 1, member: 1, body: [1, 2, 3]).encoded,
            RoomControlFrame.publishTrack("t", Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 100))).encoded,
            RoomControlFrame.declareChannels([declaration]).encoded,
            RoomControlFrame.channels([ChannelInfo(channelID: channelID, declaration: declaration)]).encoded,
            RelayEnvelope.wrap(.routed, member: 0, dataFrame(stream: 100, subgroupID: 0, text: "hello")),
            RelayEnvelope.wrap(.relayed, member: 1, dataFrame(stream: 100, subgroupID: 0, text: "hello")),
            RelayEnvelope.wrap(.routed, member: 0, ControlFrame.sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .reliableMessage).encoded),
        ]
        samples.append(TrackFrameHeader(trackID: trackID, reliability: .reliableOrdered).bytes + dataFrame(stream: 100, subgroupID: trackID, text: "t"))
        samples.append(ChannelFrameHeader(channelID: channelID, reliability: .reliableOrdered, compressed: true, sender: 0).bytes
            + dataFrame(stream: 100, subgroupID: channelID, text: "c"))
        return samples
    }

    @Test func garbageNeverTrapsAndIsCounted() {
        var h = RoomHarness()
        h.join("alice", channels: [try! ChannelDeclaration(label: "#c", direction: .sendrecv, compress: true, senderHeader: true)])
        h.join("bob", channels: [try! ChannelDeclaration(label: "#c", direction: .sendrecv, compress: true, senderHeader: true)])
        _ = h.clients["alice"]!.machine.publishTrack("t", reliability: .reliableOrdered)
        h.advance(by: .milliseconds(200))
        let trackID = h.relayTrackID("t") ?? 1
        let channelID = h.clients["alice"]!.machine.channels["#c"]?.channelID ?? 1
        let samples = Self.samples(trackID: trackID, channelID: channelID)
        var random = SeededRandom(seed: 2026)
        var client = h.clients["bob"]!.machine
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = random.bytes(random.below(64))
                if !bytes.isEmpty { bytes[0] = 0x10 | UInt8(random.below(16)) }  // mostly our version, any kind
            } else {
                bytes = samples[random.below(samples.count)]
                for _ in 0...random.below(3) where !bytes.isEmpty {
                    bytes[random.below(bytes.count)] ^= UInt8(1 << random.below(8))
                }
                if random.chance(0.2) { bytes = Array(bytes.prefix(random.below(bytes.count + 1))) }
            }
            // At the relay, from a member that has joined...
            h.relay.handle(h.clients["alice"]!.connection, datagram: bytes, now: h.now)
            // ...and at a client, as if from the relay.
            client.handle(datagram: bytes, now: h.now)
            while h.relay.pollAction() != nil {}
        }
        let refused = h.relay.statistics.refusals.values.reduce(0, +)
        #expect(refused > 10_000)
        #expect(h.relay.statistics.refusals(.malformed) > 1_000)
        #expect(client.statistics.malformedDatagrams > 1_000)
        // Bounded: the relay's queues for bob hold at most what its caps allow.
        #expect(h.relay.queuedBytes(h.clients["bob"]!.connection) <= h.relay.configuration.maxQueuedBytesPerReceiver + 64 * 1024)
    }
}
