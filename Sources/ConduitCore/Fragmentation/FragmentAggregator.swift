/// One fragment of a bytes-type send, as a receiver gets it: bytes sessions deliver fragments
/// unaggregated, with what the app needs to aggregate them itself.
public struct ReceivedFragment: Sendable, Hashable {
    /// The send's number within the session, shared by its fragments.
    public var messageID: UInt32
    /// Where these bytes go in the whole send.
    public var offset: Int
    /// Length of the whole send.
    public var totalLength: Int
    /// Payload bytes per fragment for this send (all fragments but the last have exactly this many).
    public var fragmentSize: Int
    /// The sender's user-defined timestamp of the send.
    public var timestamp: UInt64
    /// This fragment's bytes.
    public var bytes: [UInt8]
    /// Who sent it, in a conference (stamped by the relay); nil in a 1:1 call. Aggregate
    /// fragments per sender: message IDs are each sender's own.
    public var sender: PeerID?

    /// Makes a fragment (for tests and transports of your own).
    public init(messageID: UInt32, offset: Int, totalLength: Int, fragmentSize: Int, timestamp: UInt64, bytes: [UInt8], sender: PeerID? = nil) {
        self.messageID = messageID
        self.offset = offset
        self.totalLength = totalLength
        self.fragmentSize = fragmentSize
        self.timestamp = timestamp
        self.bytes = bytes
        self.sender = sender
    }

    /// Whether these bytes end the send (the fragments may arrive in another order on unreliable sessions).
    public var isLast: Bool { offset + bytes.count >= totalLength }
}

/// The optional helper that aggregates bytes-session fragments into whole sends (up to 4 MiB),
/// with the same caps, counted drops and one-allocation-per-send behaviour as the core's reassembler.
public struct FragmentAggregator: Sendable {
    private var reassembler: Reassembler
    private let streamID: StreamID
    private let sessionType: SessionType

    /// Makes an aggregator for one inbound bytes session.
    /// - Parameters:
    ///   - streamID: the session's stream ID.
    ///   - sessionType: `reliableBytes` or `unreliableBytes`: whether incomplete sends time out.
    ///   - configuration: caps; the default allows 4 sends of 4 MiB in progress at once.
    public init(
        streamID: StreamID,
        sessionType: SessionType = .reliableBytes,
        configuration: Reassembler.Configuration = .init(maxIncompleteMessages: 16, maxBufferedBytes: 16 * 1024 * 1024)
    ) {
        self.reassembler = Reassembler(configuration: configuration)
        self.streamID = streamID
        self.sessionType = sessionType
    }

    /// Sends rebuilt, and fragments refused or dropped, counted.
    public var statistics: Reassembler.Statistics { reassembler.statistics }

    /// Adds a fragment; returns the whole send once its last missing fragment arrives.
    /// Fragments that contradict the send they belong to are counted and ignored.
    public mutating func add(_ fragment: ReceivedFragment, now: ConduitInstant = .zero) -> (bytes: [UInt8], timestamp: UInt64)? {
        guard fragment.fragmentSize > 0, fragment.fragmentSize <= Int(UInt16.max),
            fragment.totalLength >= 0, fragment.totalLength <= sessionType.maxSendSize, fragment.offset >= 0
        else {
            return nil
        }
        let header = DataFrameHeader(
            streamID: streamID,
            sessionType: sessionType,
            messageID: fragment.messageID,
            fragmentOffset: UInt32(clamping: fragment.offset),
            totalLength: UInt32(fragment.totalLength),
            fragmentSize: UInt16(fragment.fragmentSize),
            timestamp: fragment.timestamp
        )
        // Apply the wire parser's rules so a fragment from anywhere is held to them.
        guard header.fragmentCount <= Limits.maxFragmentsPerMessage,
            fragment.totalLength == 0 ? fragment.offset == 0 : (fragment.offset < fragment.totalLength && fragment.offset % fragment.fragmentSize == 0),
            fragment.bytes.count == header.expectedPayloadLength
        else {
            return nil
        }
        let outcome = fragment.bytes.withUnsafeBytes { reassembler.ingest(header, payload: $0, now: now) }
        if case .complete(let message) = outcome { return (message.bytes, message.timestamp) }
        return nil
    }

    /// Drops sends that have waited longer than the configured timeout (for unreliable bytes).
    public mutating func expire(now: ConduitInstant) -> Int { reassembler.expire(now: now) }
}
