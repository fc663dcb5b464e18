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
    /// Caps on what one reassembler holds, and how long unreliable messages may stay incomplete.
    public struct Configuration: Sendable, Hashable {
        /// The most messages in progress at once.
        public var maxIncompleteMessages: Int
        /// The most bytes held for messages in progress, counted by the sizes they claim.
        public var maxBufferedBytes: Int
        /// How long an incomplete unreliable message may wait for its missing fragments.
        public var incompleteTimeout: Duration

        /// Makes a configuration: 64 messages, 16 MiB, 3 s by default.
        public init(maxIncompleteMessages: Int = 64, maxBufferedBytes: Int = 16 * 1024 * 1024, incompleteTimeout: Duration = .seconds(3)) {
            self.maxIncompleteMessages = maxIncompleteMessages
            self.maxBufferedBytes = maxBufferedBytes
            self.incompleteTimeout = incompleteTimeout
        }
    }

    /// What the reassembler completed and refused, counted since it was made.
    public struct Statistics: Sendable, Hashable {
        /// Messages completed and handed over.
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
        /// All counters at zero.
        public init() {}
    }

    /// What identifies a message in progress: its stream, subgroup and message ID.
    public struct Key: Hashable, Sendable {
        /// The session's stream ID.
        public var streamID: StreamID
        /// The subgroup's number on the link (0: none).
        public var subgroupID: UInt16
        /// The send's number within its session.
        public var messageID: UInt32
        /// Makes a key.
        public init(streamID: StreamID, subgroupID: UInt16, messageID: UInt32) {
            self.streamID = streamID
            self.subgroupID = subgroupID
            self.messageID = messageID
        }
    }

    /// A completed message.
    public struct Message: Sendable, Hashable {
        /// Which message this is.
        public var key: Key
        /// The session type it was sent with.
        public var sessionType: SessionType
        /// The sender's user-defined timestamp.
        public var timestamp: UInt64
        /// The whole message.
        public var bytes: [UInt8]
    }

    /// What happened to a fragment.
    public enum Outcome: Sendable, Hashable {
        /// Stored; more fragments are needed.
        case incomplete
        /// The fragment completed its message, which is returned.
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

    /// The caps this reassembler enforces.
    public var configuration: Configuration
    /// What it completed and refused so far.
    public private(set) var statistics = Statistics()
    /// Messages in progress live in a flat array of slots, found through `slotOf`. Reading a
    /// field as `slots[slot]!.field` goes straight to the element: a dictionary's value getter
    /// would copy the whole entry (a retain and release of its buffer) for every field read, on
    /// every fragment. Freed slots are reused, so there are never more than
    /// `maxIncompleteMessages` of them.
    @usableFromInline var slots: ContiguousArray<Entry?> = []
    var freeSlots: [Int] = []
    var slotOf: [Key: Int] = [:]
    /// The entry the last fragment went to. Fragments of one message usually arrive together, so
    /// this spares hashing the key for all but the first. Cleared whenever its slot is freed.
    var hot: (key: Key, slot: Int)?
    /// Recently delivered message IDs per stream, so late duplicates are not delivered twice.
    /// At most ``maxTrackedStreams`` streams are remembered (512 bytes each).
    var delivered: [StreamKey: CompletedMessageWindow] = [:]
    /// The most streams whose completed message IDs are remembered (to refuse late duplicates).
    public static let maxTrackedStreams = 2048

    struct StreamKey: Hashable, Sendable {
        var streamID: StreamID
        var subgroupID: UInt16
    }
    /// Bytes reserved by incomplete messages, at their claimed size.
    public private(set) var bufferedBytes = 0

    /// Makes an empty reassembler.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        slotOf.reserveCapacity(configuration.maxIncompleteMessages)
    }

    /// Messages in progress now.
    public var incompleteMessages: Int { slotOf.count }

    /// Takes one validated fragment (see ``DataFrameHeader/parse(_:)``).
    public mutating func ingest(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, now: ConduitInstant) -> Outcome {
        let key = Key(streamID: header.streamID, subgroupID: header.subgroupID, messageID: header.messageID)
        let total = Int(header.totalLength)

        if let hot, hot.key == key {
            return add(header, payload: payload, at: hot.slot, key: key)
        }
        // No hashing for the table of messages in progress while it is empty (the usual case
        // when every message fits one frame).
        if !slotOf.isEmpty, let slot = slotOf[key] {
            hot = (key, slot)
            return add(header, payload: payload, at: slot, key: key)
        }
        let stream = StreamKey(streamID: key.streamID, subgroupID: key.subgroupID)
        // The stream's window of delivered messages: looked up once, checked and marked in place.
        let window = delivered.index(forKey: stream)
        if let window, { (seen: inout CompletedMessageWindow) in seen.contains(key.messageID) }(&delivered.values[window]) {
            statistics.duplicateFragments += 1
            return .dropped
        }
        // Fast path: the whole message is in this frame.
        if header.fragmentCount == 1 {
            statistics.completedMessages += 1
            if let window {
                { (seen: inout CompletedMessageWindow) in seen.insert(key.messageID) }(&delivered.values[window])
            } else {
                markDelivered(stream, key.messageID)
            }
            PayloadCopies.countReceive(payload.count)
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
        let entry = Entry(
            buffer: buffer,
            totalLength: total,
            fragmentSize: Int(header.fragmentSize),
            fragmentCount: header.fragmentCount,
            receivedFragments: 0,
            sessionType: header.sessionType,
            timestamp: header.timestamp,
            firstSeen: now
        )
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = entry
        } else {
            slot = slots.count
            slots.append(entry)
        }
        slotOf[key] = slot
        bufferedBytes += total
        hot = (key, slot)
        return add(header, payload: payload, at: slot, key: key)
    }

    /// Frees the slot of a message in progress and returns its entry.
    mutating func removeEntry(_ key: Key) -> Entry? {
        guard let slot = slotOf.removeValue(forKey: key) else { return nil }
        if hot?.slot == slot { hot = nil }
        let entry = slots[slot]
        slots[slot] = nil
        freeSlots.append(slot)
        return entry
    }

    @usableFromInline
    package mutating func add(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, at slot: Int, key: Key) -> Outcome {
        // Read the entry's fields one by one: binding the whole entry to a local would hold a
        // second reference to its buffer and make the write below copy the message each time.
        let total = slots[slot]!.totalLength
        guard Int(header.totalLength) == total, Int(header.fragmentSize) == slots[slot]!.fragmentSize,
            header.sessionType == slots[slot]!.sessionType
        else {
            statistics.inconsistentFragments += 1
            return .incomplete
        }
        let fragment = header.fragmentIndex
        // The slot is modified in place: the buffer stays uniquely referenced, no copy.
        let isNew = slots[slot]!.buffer.withUnsafeMutableBytes { raw -> Bool in
            let byte = total + fragment >> 3
            let bit = UInt8(1) << UInt8(fragment & 7)
            guard raw[byte] & bit == 0 else { return false }
            raw[byte] |= bit
            UnsafeMutableRawBufferPointer(rebasing: raw[Int(header.fragmentOffset)...]).copyMemory(from: payload)
            PayloadCopies.countReceive(payload.count)
            return true
        }
        guard isNew else {
            statistics.duplicateFragments += 1
            return .incomplete
        }
        slots[slot]!.receivedFragments += 1
        guard slots[slot]!.receivedFragments == slots[slot]!.fragmentCount else { return .incomplete }
        // `entry` becomes the buffer's only owner once the slot is cleared: trimmed in place.
        var entry = removeEntry(key)!
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
            slotOf.count < configuration.maxIncompleteMessages && bufferedBytes + size <= configuration.maxBufferedBytes
        }
        guard size <= configuration.maxBufferedBytes else { return false }
        while !fits() {
            guard !sessionType.isReliable,
                let oldest = slotOf.filter({ !slots[$0.value]!.sessionType.isReliable })
                    .min(by: { slots[$0.value]!.firstSeen < slots[$1.value]!.firstSeen })
            else { return false }
            bufferedBytes -= slots[oldest.value]!.totalLength
            _ = removeEntry(oldest.key)
            statistics.messagesEvicted += 1
        }
        return true
    }

    /// When the next incomplete unreliable message times out, if any.
    public var nextExpiry: ConduitInstant? {
        slots.lazy.compactMap { $0 }.filter { !$0.sessionType.isReliable }.map { $0.firstSeen + configuration.incompleteTimeout }.min()
    }

    /// Drops incomplete unreliable messages older than the timeout; returns how many.
    @discardableResult
    public mutating func expire(now: ConduitInstant) -> Int {
        let timeout = configuration.incompleteTimeout
        let expired = slotOf.keys.filter { key in
            let entry = slots[slotOf[key]!]!
            return !entry.sessionType.isReliable && entry.firstSeen + timeout <= now
        }
        for key in expired {
            bufferedBytes -= removeEntry(key)!.totalLength
        }
        statistics.messagesDroppedTimedOut += expired.count
        return expired.count
    }

    /// Forgets every message in progress on one stream, and what it delivered (the session closed).
    public mutating func discard(streamID: StreamID, subgroupID: UInt16) {
        delivered[StreamKey(streamID: streamID, subgroupID: subgroupID)] = nil
        for key in slotOf.keys where key.streamID == streamID && key.subgroupID == subgroupID {
            bufferedBytes -= removeEntry(key)!.totalLength
        }
    }
}
