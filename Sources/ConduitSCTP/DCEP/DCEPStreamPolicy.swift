#if SCTP
/// What this end does with a DCEP or user message, decided from the stream's state alone (no
/// sockets), so that the rules of RFC 8832 section 6 and RFC 8831 section 6.6 are tested directly.
///
/// **Stream parity without DTLS.** RFC 8832 section 6 has the DTLS client open channels on even
/// stream IDs and the DTLS server on odd ones, so that the two ends never pick the same ID at once
/// (the glare that the requirements of section 4 rule out). Over plain UDP there is no DTLS and so
/// no role. We pick our own IDs as if the connecting side were the DTLS client (even when we
/// connect, odd when we accept), as other peers that run DCEP over plain SCTP do, but we accept the
/// peer's OPEN on either parity: the parity condition of section 6 ("the stream identifier
/// corresponds to the role of the peer") has no role to compare with, and a standard peer that
/// opens on stream 1 while dialing us is within its rights.
///
/// **Collisions.** A peer that picks our parity can collide with us: both ends send
/// DATA_CHANNEL_OPEN on the same stream before either sees the other's. Section 6 answers an OPEN
/// on a stream already in use by closing that stream's channel (a stream reset, RFC 8831 section
/// 6.7) and sending no ACK; both ends do so, and both openers see their channel closed, with the
/// reason. We keep that rule rather than a tie-break (say, the end whose parity it is wins): the
/// loser may already have sent user data after its OPEN (section 6 allows that before the ACK), and
/// those messages would land in the winner's channel; the reset discards them with the stream. Our
/// allocator skips IDs of our parity that the peer holds, so only a true race collides.
enum DCEPStreamPolicy {
    /// A stream's channel, as far as the rules care.
    enum StreamState: Sendable, Hashable {
        /// No channel, and no reset in progress: the stream may be opened.
        case unused
        /// We sent DATA_CHANNEL_OPEN; `acked` once the peer's ACK (or any user message) came back.
        case openedLocally(acked: Bool)
        /// The peer opened it and we acknowledged.
        case openedByPeer
        /// Closing: the stream is being reset and is not usable until that finishes both ways.
        case closing
    }

    /// The answer to one PPID-50 message.
    enum DCEPAnswer: Sendable, Hashable {
        /// A valid OPEN on an unused stream: make the channel, send DATA_CHANNEL_ACK (section 6).
        case accept(DataChannelOpen)
        /// The ACK of our own OPEN: the channel may now send unordered (section 6).
        case acknowledged
        /// Section 6: close the stream's channel (reset it) and send no ACK.
        case refuse(Refusal)
        /// Nothing to do but count it; the channel (if any) is untouched.
        case ignore(Ignored)
    }

    /// Why an OPEN was refused with a stream reset.
    enum Refusal: Sendable, Hashable {
        /// We had opened the same stream ourselves and not yet heard the peer's ACK: a collision.
        case collision
        /// The stream carries a channel already (the peer's, or ours that it acknowledged).
        case streamInUse
        /// The OPEN did not parse (section 6: "not well formed").
        case malformedOpen(DCEPError.Code)
    }

    /// Why a DCEP message was counted and otherwise ignored.
    enum Ignored: Sendable, Hashable {
        /// A message type other than OPEN and ACK: reserved or unassigned in the registry of
        /// section 8.2.1, so perhaps a later extension; section 6 asks no action for it, and closing
        /// a working channel over it would punish a newer peer.
        case unknownMessageType
        /// An ACK that answers nothing (no OPEN of ours pending on that stream), or a malformed one.
        case strayAck
        /// An OPEN on a stream that is being reset: the reset already closes whatever it was.
        case streamClosing
        /// An OPEN on a stream ID beyond the negotiated streams (usrsctp does not deliver those).
        case streamOutOfRange
    }

    /// The answer to a PPID-50 message of `bytes` on a stream in `state`, of `streamCount` streams.
    static func answer(dcep bytes: some Collection<UInt8>, stream: UInt16, state: StreamState, streamCount: Int) -> DCEPAnswer {
        let message: DCEPMessage
        do {
            message = try DCEPMessage(parsing: bytes)
        } catch {
            switch (bytes.first, error.code) {
            case (DataChannelOpen.messageType, let code):
                return Int(stream) < streamCount ? refuseOpen(on: state, .malformedOpen(code)) : .ignore(.streamOutOfRange)
            case (DataChannelAck.messageType, _): return .ignore(.strayAck)
            default: return .ignore(.unknownMessageType)
            }
        }
        switch message {
        case .ack:
            return state == .openedLocally(acked: false) ? .acknowledged : .ignore(.strayAck)
        case .open(let open):
            guard Int(stream) < streamCount else { return .ignore(.streamOutOfRange) }
            return state == .unused ? .accept(open) : refuseOpen(on: state, .streamInUse)
        }
    }

    private static func refuseOpen(on state: StreamState, _ reason: Refusal) -> DCEPAnswer {
        switch state {
        case .closing: .ignore(.streamClosing)
        case .openedLocally(acked: false) where reason == .streamInUse: .refuse(.collision)
        case .unused, .openedLocally, .openedByPeer: .refuse(reason)
        }
    }

    /// The answer to a user message (any PPID other than 50).
    enum UserMessageAnswer: Sendable, Hashable {
        /// Deliver it to the channel, of this kind, empty if the PPID says so (RFC 8831 section 6.6).
        case deliver(DataChannelMessageKind, isEmpty: Bool)
        /// Count and drop: no channel on the stream (or it is closing).
        case dropNoChannel
        /// RFC 8831 section 6.6: a PPID the receiver does not support makes it close the channel
        /// ("SHOULD close the corresponding data channel"). Counted; the association stays up.
        case closeChannelUnsupportedPPID
    }

    /// The answer to a user message with `ppid` on a stream in `state`; `binaryOnly` for Conduit
    /// links, whose frames are always binary.
    static func answer(userMessagePPID ppid: UInt32, state: StreamState, binaryOnly: Bool) -> UserMessageAnswer {
        switch state {
        case .unused, .closing: return .dropNoChannel
        case .openedLocally, .openedByPeer: break
        }
        guard let known = PayloadProtocolIdentifier(rawValue: ppid), let (kind, isEmpty) = DataChannelMessageKind.received(known),
            !binaryOnly || kind == .binary
        else { return .closeChannelUnsupportedPPID }
        return .deliver(kind, isEmpty: isEmpty)
    }
}
#endif
