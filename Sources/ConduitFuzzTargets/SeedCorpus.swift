import Conduit
import ConduitARQ
import ConduitCore
import ConduitRelay
import ConduitRelayCore
import ConduitRooms
import ConduitUDP
import NIOCore
#if SCTP
import ConduitSCTP
#endif

/// The seed inputs of every target, made with the library's own encoders (and, for frames and
/// packets, recorded from real exchanges: ``SeedTraffic``). `Fuzz/corpus/<target>/` holds them;
/// `ConduitFuzzTargetsTests` checks that what is committed is what this produces, and writes it
/// with `CONDUIT_FUZZ_WRITE_SEEDS=1`.
public enum SeedCorpus {
    /// The seeds of the target called `name` (empty for an unknown name).
    public static func seeds(for name: String) -> [[UInt8]] {
        switch name {
        case "core-frame": SeedTraffic.call()
        case "relay-envelope": relayEnvelopes()
        case "room-control": roomControl().map(\.encoded)
        case "track-frame": trackFrames()
        case "channel-frame": channelFrames()
        case "invitation": invitations().compactMap { try? $0.encoded() }
        case "arq-packet": SeedTraffic.reliableLink(checksum: .crc32c) + SeedTraffic.reliableLink(checksum: .none) + SeedTraffic.framesInParts()
        case "udp-datagram": udpDatagrams()
        case "relay-token": relayTokens()
        case "relay-cluster": relayCluster()
        case "relay-roster": rosterPrograms()
        case "dcep": dcep()
        case "zlib-inflate": zlibStreams()
        case "arq-engine": arqPrograms()
        case "call-machine": callPrograms()
        case "conference-machine": roomPrograms(attack: [0, 0, 4, 1, 2, 3, 4, 0, 1, 2, 5, 0xFF, 0, 1, 0, 0, 0])
        case "udp-listener": udpListenerPrograms()
        case "relay-machine": roomPrograms(attack: [0, 0, 0, 1, 4, 9, 9, 9, 9, 0, 2, 0, 0, 0, 3, 1, 5, 0x40, 6])
        default: []
        }
    }

    /// The file name a seed is stored under: a 64-bit FNV-1a of its bytes, in hex (stable, no Foundation).
    public static func fileName(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let digits = String(hash, radix: 16)
        return "seed-" + String(repeating: "0", count: 16 - digits.count) + digits
    }

    private static func relayEnvelopes() -> [[UInt8]] {
        SeedTraffic.call().prefix(12).enumerated().map { index, frame in
            RelayEnvelope.wrap(index % 2 == 0 ? .routed : .relayed, member: UInt16(index % 3), frame)
        }
    }

    private static let reliabilities: [Reliability] = [
        .reliableOrdered, Reliability(ordered: false), Reliability(ordered: true, limit: .maxRetransmits(3)),
        Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 1_500)),
    ]

    static func roomControl() -> [RoomControlFrame] {
        let chat = try! ChannelDeclaration(label: "#chat", reliability: .reliableOrdered, protocolName: "json", compress: true, senderHeader: true)
        let cursor = try! ChannelDeclaration(label: "#cursor", direction: .sendonly, reliability: reliabilities[3])
        return [
            .join(room: "standup", peer: "alice", dataSessionsSupported: true, token: Array("ct1.payload.mac".utf8)),
            .joined(member: 3),
            .refused(.roomFull, "the room is full"),
            .peers(PeerListUpdate(version: 1, isSnapshot: true, joined: [RoomMember(member: 1, peer: "alice", dataSessionsSupported: true),
                                                                          RoomMember(member: 2, peer: "bob", dataSessionsSupported: false)], left: [])),
            .peers(PeerListUpdate(version: 2, isSnapshot: false, joined: [], left: [2])),
            .snapshotRequest, .subscribe("breakout", dataSession: true), .subscribed("breakout", id: 1, dataSession: true),
            .unsubscribe("breakout"), .unsubscribed("breakout"), .subscribeRefused("vip", .subgroupNotAllowed), .leave,
            .disconnect(.slowReceiver, "queue over its limit"), .extension(id: 9, member: 2, body: [1, 2, 3]), .ping,
            .publishTrack("camera", reliabilities[2]), .trackPublished(TrackInfo(trackID: 4, publisher: 1, name: "camera", reliability: reliabilities[3])),
            .unpublishTrack(4), .trackUnpublished(4), .subscribeTrack(4), .trackSubscribed(4), .unsubscribeTrack(4),
            .declareChannels([chat, cursor]), .channels([ChannelInfo(channelID: 1, declaration: chat), ChannelInfo(channelID: 2, declaration: cursor)]),
        ]
    }

    private static func trackFrames() -> [[UInt8]] {
        reliabilities.enumerated().map { index, reliability in
            TrackFrameHeader(trackID: UInt16(index), reliability: reliability).bytes + Array("track payload \(index)".utf8)
        }
    }

    private static func channelFrames() -> [[UInt8]] {
        reliabilities.enumerated().map { index, reliability in
            let payload = index % 2 == 0 ? Array("{\"x\":\(index)}".utf8) : Zlib.compress(Array(repeating: UInt8(index), count: 500))
            return ChannelFrameHeader(channelID: UInt16(index + 1), reliability: reliability, compressed: index % 2 == 1, sender: UInt16(index)).bytes + payload
        }
    }

    static func invitations() -> [InvitationMessage] {
        let id = InvitationID(rawValue: 77)!
        return [
            .invite(tag: 1, InvitationRequest(invitees: ["bob", "carol"], groupID: "standup", data: Array("join us".utf8), timeoutSeconds: 30, onlineUserOnly: true)),
            .invite(tag: 2, InvitationRequest(invitees: ["bob"])),
            .accept(tag: 3, id, data: [1]), .reject(tag: 4, id, data: []), .cancel(tag: 5, id, data: [2, 3]),
            .invited(tag: 1, InvitationReceipt(id: id, skippedOffline: ["dave"])), .done(tag: 3, id),
            .refused(tag: 4, id, InvitationError(.alreadyAnswered, "already answered")), .refused(tag: 9, nil, InvitationError(.notConnected, "")),
            .event(.newInvitation(NewInvitation(id: id, inviter: "alice", groupID: nil, invitees: ["bob", "carol"], data: [9], timeoutSeconds: 30))),
            .event(.inviteeAccepted(id, invitee: "bob", data: [])), .event(.inviteeRejected(id, invitee: "carol", data: [4])),
            .event(.invitationCancelled(id, inviter: "alice", data: [], reason: .inviterLeft)),
            .event(.invitationTimeout(id, invitees: ["carol"], cause: .deadline)),
        ]
    }

    private static func udpDatagrams() -> [[UInt8]] {
        let cookie = UDPCookie(time: 1_700_000_000, tagHigh: 0x0102_0304_0506_0708, tagLow: 0x1112_1314_1516_1718)
        let messages: [UDPControlMessage] = [
            .hello(ssrc: 0xA1, nonce: 5, version: UDPControlMessage.protocolVersion, mtu: 1_200, srtpProfile: 1),
            .cookie(ssrc: 0xB2, nonce: 5, cookie: cookie),
            .helloWithCookie(ssrc: 0xA1, nonce: 5, version: UDPControlMessage.protocolVersion, mtu: 1_200, cookie: cookie),
            .accept(ssrc: 0xB2, clientSSRC: 0xA1, nonce: 5, mtu: 1_200), .bye(ssrc: 0xA1), .reject(ssrc: 0xB2, clientSSRC: 0xA1, reason: 2),
            .pathChallenge(ssrc: 0xB2, clientSSRC: 0xA1, challenge: 0x0C0F_FEE0), .pathResponse(ssrc: 0xA1, serverSSRC: 0xB2, challenge: 0x0C0F_FEE0),
        ]
        var out: [[UInt8]] = messages.map { message in
            var buffer = ByteBuffer()
            message.write(into: &buffer)
            return Array(buffer.readableBytesView)
        }
        for (index, packet) in SeedTraffic.reliableLink(checksum: .crc32c).prefix(4).enumerated() {
            var buffer = ByteBuffer()
            RTPHeader(sequence: UInt16(index), timestamp: UInt32(index) * 160, ssrc: 0xA1).write(into: &buffer)
            out.append(Array(buffer.readableBytesView) + packet)
        }
        return out
    }

    private static func relayTokens() -> [[UInt8]] {
        let secret = try! RelaySecret(bytes: Array(repeating: 0x5A, count: 32))
        let tokens = [
            RelayToken(room: "standup", peer: "alice", canPublish: true, canSubscribe: true, allowedSubgroups: nil, expiresAt: 1_800_000_000, id: Array(0..<16)),
            RelayToken(room: "standup", peer: "bob", canPublish: false, canSubscribe: true, allowedSubgroups: ["breakout", "vip"], expiresAt: 1_800_000_000, id: Array(16..<32)),
        ]
        return tokens.map(\.payload) + tokens.map { Array($0.signed(with: secret).utf8) }
    }

    private static func relayCluster() -> [[UInt8]] {
        let node = RelayNodeID(0x2222)
        let room = RoomProgramRun.room
        let presence = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 1, body: .presence(
            members: [RoomMember(member: 1, peer: "carol", dataSessionsSupported: true), RoomMember(member: 2, peer: "dave", dataSessionsSupported: false)],
            wantsReply: true))
        let data = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 2, body: .data(origin: 1, targetNode: 0, targetMember: 0, frame: SeedTraffic.call().first ?? [0]))
        let direct = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 3, body: .data(origin: 2, targetNode: 0x1111, targetMember: 1, frame: [1, 2, 3]))
        let gone = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 4, body: .presence(members: [], wantsReply: false))
        let use = RelayClusterTokenUse(node: node, sequence: 1, expiresAt: 1_800_000_000, tokenID: Array(0..<16))
        let subgroups = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 5, body: .subgroups([
            RelayClusterSubgroup(id: 3, name: "team", dataSession: true, subscribers: [1, 2]),
            RelayClusterSubgroup(id: 9, name: "ops", dataSession: false, subscribers: [2]),
        ]))
        let chat = try? ChannelDeclaration(label: "#chat", direction: .sendrecv, protocolName: "chat-v1", senderHeader: true)
        let channels = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 6, body: .channels(chat.map {
            [RelayClusterChannel(id: 2, declaration: $0, directions: [1: .sendrecv, 2: .recvonly])]
        } ?? []))
        let tracks = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 7, body: .tracks(
            published: [TrackInfo(trackID: 4, publisher: 1, name: "whiteboard", reliability: .reliableOrdered)],
            subscribed: [RelayClusterTrackKey(node: FuzzTargets.clusterNode, track: 1)]))
        let held = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 8, body: .presence(
            members: [RoomMember(member: 1, peer: "carol", dataSessionsSupported: true)], wantsReply: false, holdingBack: true))
        let note = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 9, body: .extension(
            origin: 1, targetNode: FuzzTargets.clusterNode.rawValue, targetMember: 1, id: 2, body: Array("join me".utf8)))
        let pressure = RelayClusterMessage(node: node, room: room, epoch: 1, sequence: 10, body: .pressure(holdingBack: true))
        return [presence.encoded, data.encoded, direct.encoded, gone.encoded, use.encoded, subgroups.encoded, channels.encoded, tracks.encoded,
                held.encoded, note.encoded, pressure.encoded] + clusterNodeMessages(from: node).map(\.encoded)
    }

    private static func dcep() -> [[UInt8]] {
        #if SCTP
        let opens = [
            DataChannelOpen(reliability: .reliableOrdered, label: "chat", protocol: "json"),
            DataChannelOpen(reliability: Reliability(ordered: false, limit: .maxRetransmits(0)), priority: 128, label: "", protocol: ""),
            DataChannelOpen(reliability: Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 300)), label: "telemetry", protocol: "cbor"),
        ]
        return opens.map { DCEPMessage.open($0).bytes } + [DCEPMessage.ack.bytes]
        #else
        return []
        #endif
    }

    /// Programs for `arq-engine` (operation bytes as ``ARQProgramRun`` reads them): sends on every
    /// channel, transmits, deliveries, a duplicate, a loss, time steps, one with junk.
    private static func arqPrograms() -> [[UInt8]] {
        let sends: [UInt8] = [0, 0, 10, 0, 1, 200, 0, 2, 50, 0, 3, 0, 0, 0, 240]
        let exchange: [UInt8] = [1, 3, 0, 3, 2, 3, 0, 2, 3, 0, 4, 25, 1, 3, 3, 3, 0, 4, 100, 1, 3, 0, 2, 3, 0]
        return [sends + exchange, sends + exchange + sends + [4, 255, 4, 255] + exchange, sends + [1, 5, 4, 0x12, 0, 0, 0] + exchange]
    }

    /// Programs for `call-machine` (a start byte, then operations as ``CallProgramRun`` reads
    /// them), one from every starting state, two with small caps and pacing: B's frames delivered,
    /// sends and accepts on both sides, time steps, a graceful close, a junk datagram, a replayed
    /// frame, a hang-up.
    private static func callPrograms() -> [[UInt8]] {
        let exchange: [UInt8] = [
            7, 2, 3, 3, 3, 6, 1, 0x13, 5, 1, 0x02, 7, 2, 3, 3, 3, 4, 20, 5, 2, 0x10, 6, 2, 0x00, 7, 2, 3, 3, 3, 4, 200,
            6, 4, 0x10, 7, 2, 3, 3, 3, 4, 0x90, 7, 2, 3,
        ]
        let attack: [UInt8] = [0, 4, 1, 2, 3, 4, 1, 5, 3, 0xFF, 1, 2, 0, 0, 5, 5, 0]
        return [0, 1, 2, 3, 4, 5, 0x83, 0xC3].map { [$0] + exchange } + [[3] + exchange + attack]
    }

    /// Programs for the room targets (a start byte, then operations as `runRoomProgram` reads
    /// them), one from every starting state and one with small relay caps: frames delivered both
    /// ways, sends on sessions and on a track, time steps; then the target's own attack.
    private static func roomPrograms(attack: [UInt8]) -> [[UInt8]] {
        let deliver: [UInt8] = [7, 1, 3, 6, 2, 0, 3, 2, 1, 3]
        let exchange: [UInt8] = deliver + [12, 1, 0x13, 4, 1, 0x02] + deliver + [3, 20, 4, 10, 0x01] + deliver + [3, 0x90] + deliver
        return [0, 1, 2, 3, 4, 5, 0x83].map { [$0] + exchange } + [[3] + exchange + attack + deliver]
    }

    /// Programs for `udp-listener` (operations as ``UDPListenerRun`` reads them): HELLOs from a
    /// few hosts, their cookies echoed (some after they went stale), forged, a junk echo recorded
    /// from a real HELLO WITH COOKIE, links closing, a host at its cap.
    private static func udpListenerPrograms() -> [[UInt8]] {
        let handshakes: [UInt8] = [0, 1, 7, 100, 0, 2, 8, 100, 1, 0, 1, 1, 4, 50, 0, 1, 9, 100, 1, 2, 2, 0, 2, 0x11, 2, 1, 3, 5, 5, 0]
        let crowd: [UInt8] = (0..<6).flatMap { index -> [UInt8] in [0, 3, UInt8(index), 90, 1, UInt8(index)] } + [4, 200, 1, 0, 2, 2, 4, 2, 5, 9]
        var echo = ByteBuffer()
        UDPControlMessage.helloWithCookie(ssrc: 7, nonce: 1, version: UDPControlMessage.protocolVersion, mtu: 1_200,
                                          cookie: UDPCookie(time: 5, tagHigh: 1, tagLow: 2)).write(into: &echo)
        let recorded = Array(echo.readableBytesView)
        return [handshakes, crowd, handshakes + [3, 1, UInt8(recorded.count)] + recorded + [4, 0xFF] + handshakes]
    }

    private static func zlibStreams() -> [[UInt8]] {
        guard Zlib.isAvailable else { return [] }
        return [Array("{\"cursor\":[10,20]}".utf8), Array(repeating: 0x41, count: 4_000), (0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 31) }]
            .map(Zlib.compress)
    }
}
