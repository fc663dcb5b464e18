#if SCTP
public import ConduitCore

/// How a Conduit call rides on data channels, so that a standard RFC 8831 peer sees ordinary,
/// sensibly labelled channels and a Conduit peer gets full data-session semantics.
///
/// ```
///  Conduit (FrameTag channel)                 data channel (RFC 8832)
///  ─────────────────────────────────────────  ─────────────────────────────────────────────────
///  channel 0: hello, goodbye                  "conduit", protocol "conduit/1", reliable ordered,
///                                             opened by the caller on stream 0; both ends send on it
///  channel stream|subgroup<<16: one data      "conduit/<stream>[.<subgroup>]/<session type>",
///  session (its data and control frames)      protocol "conduit/1", opened lazily by whichever end
///                                             writes first on it (even IDs caller, odd callee)
///  reliable types   (reliable*)               channel type RELIABLE (0x00): ordered, retransmitted
///  unreliable types (unreliable*)             PARTIAL_RELIABLE_REXMIT_UNORDERED (0x81), param 0
///  every frame                                one SCTP message, PPID 53 (binary)
/// ```
/// Each frame keeps its own delivery: a session's control frames (open, close) go ordered and
/// reliable even on an unreliable session's channel, data frames as the session type says, so a
/// close never overtakes reliable data. A goodbye waits until everything before it is acknowledged,
/// since SCTP does not order across streams. Conduit channels live as long as the association (a
/// session reopened on a stream ID reuses its channel).
///
/// The accepting side tells a Conduit caller from a standard peer by the protocol of the first
/// channel the peer opens: "conduit/1" makes the association a Conduit link, anything else a
/// standard association (``SCTPTransport/init(standardPeers:logger:metricsFactory:)``).
public enum SCTPConduitMapping {
    /// The protocol of every Conduit channel: a listener that sees it on the first channel treats the peer as a Conduit caller.
    public static let protocolName = "conduit/1"
    /// The label of the call's own channel, opened by the caller.
    public static let callLabel = "conduit"

    /// Frames up to this size are one SCTP message each. The wire format's 16-bit fragment length
    /// caps a fragment at 65535 bytes, so a message of up to 64 KiB - 1 is one SCTP message and a
    /// 128 KiB message is three; the core chunks bytes types and larger messages into fragments.
    public static let mtu = DataFrameHeader.size + 65_535

    /// Native reliability and order per channel (usrsctp does both, and PR-SCTP for unreliable
    /// sessions), so the runtime puts no reliability engine of its own underneath.
    public static let capabilities = TransportCapabilities(
        isReliable: true, isOrdered: true, supportsPartialReliability: true, maxDatagramSize: mtu, mtu: mtu
    )

    /// The value usrsctp's priority scheduler (SCTP_SS_PRIORITY) gives a session's stream: lower
    /// is sent first, so `high` is 0 (the default of a stream never set, such as the call's own).
    static func schedulingValue(_ priority: OutboundSessionOptions.Priority) -> UInt16 {
        UInt16(OutboundSessionOptions.Priority.high.rawValue - priority.rawValue)
    }

    /// The priority a channel's DATA_CHANNEL_OPEN announces: WebRTC's values for its
    /// `RTCPriorityType` (RFC 8831 section 6.4; W3C webrtc-priority): 128, 256, 512, 1024.
    static func channelPriority(_ priority: OutboundSessionOptions.Priority) -> UInt16 {
        UInt16(128 << priority.rawValue)
    }

    /// The label of the channel for Conduit link channel `key`, whose first frame is `frame`.
    static func label(forChannel key: UInt32, type: SessionType?) -> String {
        guard key != FrameTag.controlChannel else { return callLabel }
        let stream = key & 0xFFFF, subgroup = key >> 16
        let name = subgroup == 0 ? "\(stream)" : "\(stream).\(subgroup)"
        return type.map { "conduit/\(name)/\($0)" } ?? "conduit/\(name)"
    }

    /// The session type a frame announces: a data frame's, or a session-open control frame's.
    static func sessionType(of frame: UnsafeRawBufferPointer) -> SessionType? {
        guard frame.count >= ControlFrame.headerSize else { return nil }
        switch frame[0] & 0x0F {
        case FrameKind.data.rawValue:
            return (try? DataFrameHeader.parse(frame))?.0.sessionType
        case FrameKind.control.rawValue:
            if case .sessionOpen(_, _, _, let type)? = try? ControlFrame.parse(frame) { return type }
            return nil
        default:
            return nil
        }
    }
}
#endif
