import ConduitCore
import ConduitRooms

extension FuzzTargets {
    /// A datagram on a conference link: the envelope, then the inner v1 frame (through `core-frame`).
    static let relayEnvelope = FuzzTarget(
        name: "relay-envelope",
        summary: "RelayFrameKind.peek, RelayEnvelope.parse and the inner v1 frame: byte-identical re-encoding"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "relay-envelope")
        let kind = RelayFrameKind.peek(input)
        guard let envelope = try? RelayEnvelope.parse(input) else { return false }
        try check.require(kind == envelope.kind, "peek says \(String(describing: kind)), parse says \(envelope.kind)")
        try check.requireSameBytes(envelope.bytes, input[0..<RelayEnvelope.size], "envelope \(envelope)")
        var restamped = Array(input)
        RelayEnvelope.restamp(&restamped, from: 7)
        let reparsed = restamped.withUnsafeBytes { try? RelayEnvelope.parse($0) }
        try check.require(reparsed == RelayEnvelope(kind: .relayed, member: 7), "a restamped envelope does not parse back")
        try check.require(restamped[RelayEnvelope.size...].elementsEqual(input[RelayEnvelope.size...]), "restamping touched the inner frame")
        return try coreFrame.run(UnsafeRawBufferPointer(rebasing: input[RelayEnvelope.size...]))
    }

    /// Room control (join, peer lists, subgroups, tracks, channels, extensions) as the relay and its
    /// clients exchange it: bounded counts and sizes, byte-identical re-encoding.
    static let roomControl = FuzzTarget(
        name: "room-control",
        summary: "RoomControlFrame.parse: counts and sizes within the frame's limits, byte-identical re-encoding"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "room-control")
        guard let frame = try? RoomControlFrame.parse(input) else { return false }
        switch frame {
        case .join(_, _, _, let token):
            try check.require(token.count <= RoomControlFrame.maxTokenBytes, "token of \(token.count) bytes")
        case .peers(let update):
            try check.require(update.joined.count <= RoomControlFrame.maxPeersPerFrame && update.left.count <= RoomControlFrame.maxPeersPerFrame,
                              "\(update.joined.count) joined, \(update.left.count) left in one frame")
        case .extension(_, _, let body):
            try check.require(body.count <= RoomControlFrame.maxExtensionBytes, "extension body of \(body.count) bytes")
        case .declareChannels(let declarations):
            try check.require(declarations.count <= RoomControlFrame.maxChannels, "\(declarations.count) channels declared")
        case .channels(let infos):
            try check.require(infos.count <= RoomControlFrame.maxChannels, "\(infos.count) channels")
        default:
            break
        }
        try check.requireSameBytes(frame.encoded, input, "room control frame")
        return true
    }

    /// The header of a data-track fragment, and the lifetime the relay reads and rewrites in place.
    static let trackFrame = FuzzTarget(
        name: "track-frame",
        summary: "TrackFrameHeader.parse, remainingLifetime, setRemainingLifetime: byte-identical header"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "track-frame")
        guard let header = try? TrackFrameHeader.parse(input) else { return false }
        try check.requireSameBytes(header.bytes, input[0..<TrackFrameHeader.size], "track header \(header)")
        try checkLifetime(Array(input), reliability: header.reliability, check)
        return true
    }

    /// The header of a labeled-channel fragment (track layout plus compression and sender).
    static let channelFrame = FuzzTarget(
        name: "channel-frame",
        summary: "ChannelFrameHeader.parse, stampSender, lifetime rewriting: byte-identical header"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "channel-frame")
        guard let header = try? ChannelFrameHeader.parse(input) else { return false }
        try check.requireSameBytes(header.bytes, input[0..<ChannelFrameHeader.size], "channel header \(header)")
        var stamped = Array(input)
        ChannelFrameHeader.stampSender(&stamped, 0xBEEF)
        let restamped = stamped.withUnsafeBytes { try? ChannelFrameHeader.parse($0) }
        try check.require(restamped?.sender == 0xBEEF && restamped?.channelID == header.channelID, "stamping the sender changed more than the sender")
        try checkLifetime(Array(input), reliability: header.reliability, check)
        return true
    }

    /// A lifetime is readable exactly when the reliability has one, and rewriting it changes only it.
    private static func checkLifetime(_ frame: [UInt8], reliability: Reliability, _ check: Invariants) throws(FuzzFailure) {
        let lifetime = TrackFrameHeader.remainingLifetime(frame)
        if case .maxPacketLifeTime(let milliseconds) = reliability.limit {
            try check.require(lifetime == milliseconds, "remainingLifetime \(String(describing: lifetime)), header says \(milliseconds)")
            var rewritten = frame
            TrackFrameHeader.setRemainingLifetime(&rewritten, milliseconds: milliseconds / 2)
            try check.require(TrackFrameHeader.remainingLifetime(rewritten) == milliseconds / 2, "the rewritten lifetime does not read back")
            try check.require(rewritten[8...].elementsEqual(frame[8...]), "rewriting the lifetime touched the payload")
        } else {
            try check.require(lifetime == nil, "remainingLifetime \(String(describing: lifetime)) for \(reliability)")
        }
    }

    /// Invitation messages (requests, answers, the relay's events): what parses encodes to a
    /// message that parses back equal (and, but for a refusal's text, to the same bytes); peer
    /// lists bounded.
    static let invitation = FuzzTarget(
        name: "invitation",
        summary: "InvitationMessage.parse (InvitationWireReader): bounded peer lists, encode/parse round trip"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "invitation")
        guard let message = try? InvitationMessage.parse(input) else { return false }
        for list in peerLists(message) {
            try check.require(list.count <= InvitationMessage.maxPeersPerList, "a peer list of \(list.count)")
        }
        let encoded: [UInt8]
        do { encoded = try message.encoded() } catch {
            throw FuzzFailure(target: "invitation", message: "\(message) parsed but does not encode: \(error)")
        }
        let reparsed = try? InvitationMessage.parse(encoded)
        try check.require(reparsed == message, "\(message) encodes to \(hex(encoded)), which parses to \(String(describing: reparsed))")
        // A refusal's text is for people and decoded leniently (U+FFFD for bad UTF-8), so only its
        // value round-trips; every other message re-encodes byte for byte.
        if case .refused = message { return true }
        try check.requireSameBytes(encoded, input, "invitation message \(message)")
        return true
    }

    private static func peerLists(_ message: InvitationMessage) -> [[PeerID]] {
        switch message {
        case .invite(_, let request): [request.invitees]
        case .invited(_, let receipt): [receipt.skippedOffline]
        case .event(.newInvitation(let new)): [new.invitees]
        case .event(.invitationTimeout(_, let invitees, _)): [invitees]
        default: []
        }
    }
}
