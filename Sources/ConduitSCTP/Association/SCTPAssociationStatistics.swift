#if SCTP
import CUsrsctpSupport
import ConduitCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one association did, for tests and reports.
public struct SCTPAssociationStatistics: Sendable, Hashable {
    /// SCTP packets written to the UDP socket.
    public var packetsSent = 0
    /// SCTP packets received from the peer whose checksum was right.
    public var packetsReceived = 0
    /// Data-channel messages handed to usrsctp.
    public var messagesSent = 0
    /// Data-channel messages delivered to channels (or to the Conduit link).
    public var messagesReceived = 0
    /// Channels open now.
    public var openChannels = 0
    /// Stream IDs this end holds: open channels, and closed ones waiting for their stream reset.
    public var streamsInUse = 0
    /// Channels opened, by either side, since the association started.
    public var channelsOpened = 0
    /// Channels closed, by either side.
    public var channelsClosed = 0
    /// Messages on a stream with no channel.
    public var droppedNoChannel = 0
    /// DCEP messages ignored: unknown message types, ACKs that answer no OPEN, OPENs on a stream
    /// already being reset (RFC 8832 section 6; the association and its channels stay up).
    public var droppedDCEP = 0
    /// The peer's DATA_CHANNEL_OPENs answered by resetting the stream, with no ACK (RFC 8832
    /// section 6): on a stream already in use, or malformed.
    public var opensRefused = 0
    /// Of ``opensRefused``, those that collided with our own OPEN on the same stream (both ends
    /// opened it at once: possible without DTLS roles); both ends' channels are closed.
    public var channelCollisions = 0
    /// Messages with a PPID data channels do not use (52, 54, or unknown); their channel is closed (RFC 8831 section 6.6).
    public var droppedPPID = 0
    /// Messages larger than ``DataChannel/maxMessageSize``, or read in parts while other partly
    /// read messages already held eight times that (interleaved partial delivery, I-DATA).
    public var droppedOversize = 0
    /// Packets whose CRC32c was wrong (corrupted on the way), dropped before usrsctp saw them.
    public var droppedChecksum = 0
    /// Stream resets the peer refused (the stream ID stays in use until one succeeds).
    public var resetsRefused = 0
    /// Partially reliable messages usrsctp abandoned (their retransmission limit or lifetime ran out).
    public var sendsAbandoned = 0
    /// Streams whose scheduling priority usrsctp refused to set (they keep its default, the highest).
    public var priorityRefused = 0
    /// Whether the association negotiated I-DATA (RFC 8260): messages of different streams interleave.
    public var interleaving = false
    /// All counters at zero.
    public init() {}
}

/// Sizes and numbers an association is set up with.
struct SCTPLimits: Sendable {
    var streams: UInt16 = 1024
    var initAttempts: UInt16 = 8
    var localPort: UInt16 = 5000
    var remotePort: UInt16 = 5000
    /// SCTP packet size, which is the UDP payload size.
    var mtu: UInt32 = 1232
    /// Largest message read (bigger ones are dropped and counted) or sent.
    var maxMessageSize = DataChannel.maxMessageSize
    /// usrsctp's send buffer (SO_SNDBUF): what may wait below the session scheduler.
    var sendBufferBytes: UInt32 = SCTPStack.bufferBytes
    /// The receive buffer (SO_RCVBUF), which is the window the peer may fill ahead of the reader.
    var receiveBufferBytes: UInt32 = SCTPStack.bufferBytes
    /// Offer I-DATA (RFC 8260).
    var interleaving = true

    /// The same, as the C shim takes them.
    var settings: conduit_sctp_settings {
        conduit_sctp_settings(
            streams: streams, init_attempts: initAttempts, mtu: mtu,
            send_buffer_bytes: sendBufferBytes, receive_buffer_bytes: receiveBufferBytes, interleaving: interleaving ? 1 : 0
        )
    }
}

enum SCTPErrors {
    static func system(_ what: String, _ error: Int32) -> ConduitError {
        ConduitError(.connectionFailed, "\(what): \(String(cString: strerror(error)))")
    }
}
#endif
