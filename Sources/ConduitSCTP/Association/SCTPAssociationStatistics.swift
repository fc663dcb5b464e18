#if SCTP
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
    public var packetsSent = 0
    public var packetsReceived = 0
    public var messagesSent = 0
    public var messagesReceived = 0
    /// Channels open now, and stream IDs this end holds (open, or waiting for their reset).
    public var openChannels = 0
    public var streamsInUse = 0
    public var channelsOpened = 0
    public var channelsClosed = 0
    /// Messages on a stream with no channel, bad DCEP messages, and PPIDs we do not take.
    public var droppedNoChannel = 0
    public var droppedDCEP = 0
    public var droppedPPID = 0
    public var droppedOversize = 0
    /// Packets whose CRC32c was wrong (corrupted on the way), dropped before usrsctp saw them.
    public var droppedChecksum = 0
    public var resetsRefused = 0
    public var sendsAbandoned = 0
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
}

enum SCTPErrors {
    static func system(_ what: String, _ error: Int32) -> ConduitError {
        ConduitError(.connectionFailed, "\(what): \(String(cString: strerror(error)))")
    }
}
#endif
