/// Rebuilds messages from data frames that may arrive out of order, under hard caps.
///
/// Memory: a multi-fragment message costs one allocation, made when its first fragment arrives:
/// the message bytes followed by a bitmap with one bit per fragment. When the last fragment lands
/// the bitmap is trimmed off in place and the same array is handed out, so a message costs no
/// allocation per fragment and no copy beyond the one from the datagram. A single-fragment
/// message is copied straight into its result.
///
/// Bounds: at most `maxIncompleteMessages` messages and `maxBufferedBytes` bytes (counted at the
/// size each message claims, so a peer cannot pin more than the budget by lying) are in progress
/// per reassembler, which the runtime keeps one of per peer. Incomplete *unreliable* messages are
/// dropped after `incompleteTimeout`. Every refusal is counted in ``Reassembler/Statistics``.
public struct Reassembler: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var maxIncompleteMessages: Int
        public var maxBufferedBytes: Int
        /// How long an incomplete unreliable message may wait for its missing fragments.
        public var incompleteTimeout: Duration

        public init(maxIncompleteMessages: Int = 64, maxBufferedBytes: Int = 16 * 1024 * 1024, incompleteTimeout: Duration = .seconds(3)) {
            self.maxIncompleteMessages = maxIncompleteMessages
            self.maxBufferedBytes = maxBufferedBytes
            self.incompleteTimeout = incompleteTimeout
        }
    }

    public struct Statistics: Sendable, Hashable {
        public var completedMessages = 0
        /// Fragments already received for their message, or for a message already delivered
        /// (counted, then ignored).
        public var duplicateFragments = 0
        /// Fragments whose size or count disagreed with earlier fragments of the same message.
        public var inconsistentFragments = 0
        /// Messages refused because the message-count or byte cap was reached.
        public var messagesDroppedOverCapacity = 0
        /// Incomplete unreliable messages dropped after the timeout.
        public var messagesDroppedTimedOut = 0
        /// Incomplete messages evicted to make room for newer unreliable ones.
        public var messagesEvicted = 0
        public init() {}
    }

    public struct Key: Hashable, Sendable {
        public var streamID: StreamID
        public var subgroupID: UInt16
        public var messageID: UInt32
        public init(streamID: StreamID, subgroupID: UInt16, messageID: UInt32) {
            self.streamID = streamID
            self.subgroupID = subgroupID
            self.messageID = messageID
        }
    }

    /// A completed message.
    public struct Message: Sendable, Hashable {
        public var key: Key
        public var sessionType: SessionType
        public var timestamp: UInt64
        public var bytes: [UInt8]
    }

    public enum Outcome: Sendable, Hashable {
        /// Stored; more fragments are needed.
        case incomplete
        case complete(Message)
        /// Not stored; the reason was counted.
        case dropped
    }

    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var buffer: [UInt8]
        @usableFromInline let totalLength: Int
        @usableFromInline let fragmentSize: Int
        @usableFromInline let fragmentCount: Int
        @usableFromInline var receivedFragments: Int
        @usableFromInline let sessionType: SessionType
        @usableFromInline let timestamp: UInt64
        @usableFromInline let firstSeen: ConduitInstant
    }

    public var configuration: Configuration
    public private(set) var statistics = Statistics()
    @usableFromInline var entries: [Key: Entry] = [:]
    /// The entry the last fragment went to. Fragments of one message usually arrive together, so
    /// this spares hashing the key for all but the first. Every insert or removal must clear it:
    /// a dictionary's indices are only stable until it changes shape.
    var hot: (key: Key, index: Dictionary<Key, Entry>.Index)?
    /// Recently delivered message IDs per stream, so late duplicates are not delivered twice.
    /// At most ``maxTrackedStreams`` streams are remembered (512 bytes each).
    var delivered: [StreamKey: CompletedMessageWindow] = [:]
    public static let maxTrackedStreams = 2048

    struct StreamKey: Hashable, Sendable {
        var streamID: StreamID
        var subgroupID: UInt16
    }
    /// Bytes reserved by incomplete messages, at their claimed size.
    public private(set) var bufferedBytes = 0

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        entries.reserveCapacity(configuration.maxIncompleteMessages)
    }

    public var incompleteMessages: Int { entries.count }

    /// Takes one validated fragment (see ``DataFrameHeader/parse(_:)``).
    public mutating func ingest(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, now: ConduitInstant) -> Outcome {
        let key = Key(streamID: header.streamID, subgroupID: header.subgroupID, messageID: header.messageID)
        let total = Int(header.totalLength)

        if let hot, hot.key == key {
            return add(header, payload: payload, at: hot.index, key: key)
        }
        if let index = entries.index(forKey: key) {
            hot = (key, index)
            return add(header, payload: payload, at: index, key: key)
        }
        let stream = StreamKey(streamID: key.streamID, subgroupID: key.subgroupID)
        if delivered[stream]?.contains(key.messageID) == true {
            statistics.duplicateFragments += 1
            return .dropped
        }
        // Fast path: the whole message is in this frame.
        if header.fragmentCount == 1 {
            statistics.completedMessages += 1
            markDelivered(stream, key.messageID)
            return .complete(Message(key: key, sessionType: header.sessionType, timestamp: header.timestamp, bytes: Array(payload)))
        }
        guard makeRoom(for: total, sessionType: header.sessionType) else {
            statistics.messagesDroppedOverCapacity += 1
            return .dropped
        }
        let bitmapBytes = (header.fragmentCount + 7) / 8
        let buffer = [UInt8](unsafeUninitializedCapacity: total + bitmapBytes) { raw, initialized in
            // Message bytes stay uninitialized until their fragment lands; only the bitmap is zeroed.
            UnsafeMutableBufferPointer(rebasing: raw[total...]).initialize(repeating: 0)
            initialized = total + bitmapBytes
        }
        hot = nil
        entries[key] = Entry(
            buffer: buffer,
            totalLength: total,
            fragmentSize: Int(header.fragmentSize),
            fragmentCount: header.fragmentCount,
            receivedFragments: 0,
            sessionType: header.sessionType,
            timestamp: header.timestamp,
            firstSeen: now
        )
        bufferedBytes += total
        let index = entries.index(forKey: key)!
        hot = (key, index)
        return add(header, payload: payload, at: index, key: key)
    }

    @usableFromInline
    mutating func add(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, at index: Dictionary<Key, Entry>.Index, key: Key) -> Outcome {
        // Read the entry's fields one by one: binding the whole entry to a local would hold a
        // second reference to its buffer and make the write below copy the message each time.
        let total = entries.values[index].totalLength
        guard Int(header.totalLength) == total, Int(header.fragmentSize) == entries.values[index].fragmentSize,
            header.sessionType == entries.values[index].sessionType
        else {
            statistics.inconsistentFragments += 1
            return .incomplete
        }
        let fragment = header.fragmentIndex
        // `values[index]` is modified in place: the buffer stays uniquely referenced, no copy.
        let isNew = entries.values[index].buffer.withUnsafeMutableBytes { raw -> Bool in
            let byte = total + fragment >> 3
            let bit = UInt8(1) << UInt8(fragment & 7)
            guard raw[byte] & bit == 0 else { return false }
            raw[byte] |= bit
            UnsafeMutableRawBufferPointer(rebasing: raw[Int(header.fragmentOffset)...]).copyMemory(from: payload)
            return true
        }
        guard isNew else {
            statistics.duplicateFragments += 1
            return .incomplete
        }
        entries.values[index].receivedFragments += 1
        guard entries.values[index].receivedFragments == entries.values[index].fragmentCount else { return .incomplete }
        hot = nil
        var entry = entries.remove(at: index).value
        bufferedBytes -= entry.totalLength
        entry.buffer.removeLast(entry.buffer.count - entry.totalLength)  // drop the bitmap, in place
        statistics.completedMessages += 1
        markDelivered(StreamKey(streamID: key.streamID, subgroupID: key.subgroupID), key.messageID)
        return .complete(Message(key: key, sessionType: entry.sessionType, timestamp: entry.timestamp, bytes: entry.buffer))
    }

    mutating func markDelivered(_ stream: StreamKey, _ messageID: UInt32) {
        if delivered[stream] == nil, delivered.count >= Self.maxTrackedStreams {
            delivered.remove(at: delivered.startIndex)  // bounded memory beats perfect memory
        }
        delivered[stream, default: CompletedMessageWindow()].insert(messageID)
    }

    /// Makes room for a new message of `size` bytes, evicting the oldest incomplete *unreliable*
    /// messages if the new one is unreliable too. Reliable messages in progress are never evicted.
    mutating func makeRoom(for size: Int, sessionType: SessionType) -> Bool {
        func fits() -> Bool {
            entries.count < configuration.maxIncompleteMessages && bufferedBytes + size <= configuration.maxBufferedBytes
        }
        guard size <= configuration.maxBufferedBytes else { return false }
        while !fits() {
            guard !sessionType.isReliable,
                let oldest = entries.filter({ !$0.value.sessionType.isReliable }).min(by: { $0.value.firstSeen < $1.value.firstSeen })
            else { return false }
            bufferedBytes -= oldest.value.totalLength
            hot = nil
            entries.removeValue(forKey: oldest.key)
            statistics.messagesEvicted += 1
        }
        return true
    }

    /// When the next incomplete unreliable message times out, if any.
    public var nextExpiry: ConduitInstant? {
        entries.values.lazy.filter { !$0.sessionType.isReliable }.map { $0.firstSeen + configuration.incompleteTimeout }.min()
    }

    /// Drops incomplete unreliable messages older than the timeout; returns how many.
    @discardableResult
    public mutating func expire(now: ConduitInstant) -> Int {
        let timeout = configuration.incompleteTimeout
        let expired = entries.filter { !$0.value.sessionType.isReliable && $0.value.firstSeen + timeout <= now }
        if !expired.isEmpty { hot = nil }
        for (key, entry) in expired {
            entries.removeValue(forKey: key)
            bufferedBytes -= entry.totalLength
        }
        statistics.messagesDroppedTimedOut += expired.count
        return expired.count
    }

    /// Forgets every message in progress on one stream, and what it delivered (the session closed).
    public mutating func discard(streamID: StreamID, subgroupID: UInt16) {
        delivered[StreamKey(streamID: streamID, subgroupID: subgroupID)] = nil
        hot = nil
        for (key, entry) in entries where key.streamID == streamID && key.subgroupID == subgroupID {
            entries.removeValue(forKey: key)
            bufferedBytes -= entry.totalLength
        }
    }
}
