#if SCTP
import ConduitCore

/// Why an SCTP association ended: what ``SCTPAssociation/closeReason()`` and
/// ``SCTPLink/closeReason()`` report, what the errors of later sends carry, and what is logged.
/// Every end of an association has one.
public enum SCTPCloseReason: Sendable, Hashable, CustomStringConvertible {
    /// This end closed it (a graceful SHUTDOWN, RFC 9260 section 9.2).
    case closedLocally
    /// The peer shut it down gracefully (SHUTDOWN).
    case shutDownByPeer
    /// The peer aborted it (ABORT, RFC 9260 section 9.1), with the reason it gave in a
    /// user-initiated-abort cause, if any.
    case abortedByPeer(reason: String?)
    /// usrsctp reported the association lost without an ABORT from the peer: retransmissions or
    /// heartbeats ran out, or the end came from a peer that had already closed its socket.
    case lost
    /// The socket failed under it.
    case failed(String)
    /// Never came up: INIT unanswered, refused, or the connect timeout.
    case notEstablished(String)
    /// Accepting side: the peer opened no data channel in time, so it was never handed out.
    case noChannelOpened
    /// Accepting side: nobody takes this kind of peer here (a standard peer at a listener for
    /// Conduit callers only, or a listener that was closed or full).
    case refused(String)

    /// An end nobody asked for: the app should treat it as a failure.
    public var isAbnormal: Bool {
        switch self {
        case .closedLocally, .shutDownByPeer: false
        case .abortedByPeer, .lost, .failed, .notEstablished, .noChannelOpened, .refused: true
        }
    }

    public var description: String {
        switch self {
        case .closedLocally: "closed by this end"
        case .shutDownByPeer: "shut down by the peer"
        case .abortedByPeer(let reason?): "aborted by the peer (\"\(reason)\")"
        case .abortedByPeer(nil): "aborted by the peer"
        case .lost: "lost (no ABORT from the peer: it stopped answering, or had closed its socket)"
        case .failed(let what): "failed: \(what)"
        case .notEstablished(let what): "never established: \(what)"
        case .noChannelOpened: "closed: the peer opened no data channel within \(SCTPUDPEndpoint.firstChannelTimeoutText)"
        case .refused(let why): "refused: \(why)"
        }
    }

    /// The error that operations on the ended association throw: `connectionClosed` (as every
    /// link throws once closed), with the reason in its message.
    func error(_ remote: String) -> ConduitError {
        ConduitError(.connectionClosed, "the SCTP association with \(remote) ended: \(description)")
    }

    /// The peer's reason in the ABORT chunk that usrsctp copies after an SCTP_COMM_LOST
    /// notification (`sac_info`): the text of a User-Initiated Abort cause (code 12, RFC 9260
    /// section 3.3.10.12), nil if there is none. Nil also when `info` is not an ABORT chunk.
    static func abortReason(fromChunk info: some Collection<UInt8>) -> String? {
        let chunk = Array(info)
        // Chunk header: type 6 (ABORT), flags, length; then causes, each code, length, data, padded to 4.
        guard chunk.count >= 4, chunk[0] == 6 else { return nil }
        let end = min(chunk.count, Int(chunk[2]) << 8 | Int(chunk[3]))
        var offset = 4
        while offset + 4 <= end {
            let code = Int(chunk[offset]) << 8 | Int(chunk[offset + 1])
            let length = Int(chunk[offset + 2]) << 8 | Int(chunk[offset + 3])
            guard length >= 4, offset + length <= end else { return nil }
            if code == 12 {
                return String(decoding: chunk[(offset + 4)..<(offset + length)], as: UTF8.self)
            }
            offset += (length + 3) & ~3
        }
        return nil
    }
}
#endif
