/// A batch of datagrams in one contiguous buffer: the caller-owned output buffer of the core.
///
/// The core appends frames; a transport writes them out (a batch maps onto `sendmmsg` or one
/// in-process hand-off). Storing all datagrams back to back keeps the send path at a couple of
/// allocations per batch instead of one per fragment; reusing a batch after `removeAll` keeps it at none.
///
/// The layer that writes a frame may tag it (``FrameTag``: channel, delivery, barrier) for the
/// link below. Tags live in a parallel array that stays empty until a datagram is tagged, so an
/// untagged batch costs nothing, and an untagged datagram reads as ``FrameTag/neutral``.
public struct DatagramBatch: Sendable, Hashable {
    /// Every datagram's bytes, back to back.
    public private(set) var storage: [UInt8]
    /// End offset of each datagram in `storage`.
    public private(set) var ends: [Int]
    /// Each datagram's tag, parallel to `ends`; empty while no datagram of the batch is tagged.
    public private(set) var tags: [FrameTag]

    /// Makes an empty batch, reserving room for `reservingBytes` bytes and `datagrams` datagrams.
    public init(reservingBytes: Int = 0, datagrams: Int = 0) {
        storage = []
        ends = []
        tags = []
        storage.reserveCapacity(reservingBytes)
        ends.reserveCapacity(datagrams)
    }

    /// The number of datagrams.
    public var count: Int { ends.count }
    /// Whether the batch holds no datagram.
    public var isEmpty: Bool { ends.isEmpty }
    /// The bytes of all datagrams together.
    public var byteCount: Int { storage.count }

    /// Byte range of datagram `index` in `storage`.
    @inlinable public func range(of index: Int) -> Range<Int> {
        (index == 0 ? 0 : ends[index - 1])..<ends[index]
    }

    /// Calls `body` with datagram `index`'s bytes, valid only during the call.
    public func withDatagram<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let range = range(of: index)
        return try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Calls `body` with every datagram in order, without copying.
    @inlinable
    public func forEachDatagram(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try storage.withUnsafeBytes { all in
            var start = 0
            for end in ends {
                try body(UnsafeRawBufferPointer(rebasing: all[start..<end]))
                start = end
            }
        }
    }

    /// How the link should carry datagram `index`: its tag, or ``FrameTag/neutral`` if it has none.
    @inlinable public func tag(at index: Int) -> FrameTag {
        tags.isEmpty ? .neutral : tags[index]
    }

    /// Tags the datagrams from `start` to the end of the batch (those the caller just appended).
    public mutating func tag(from start: Int, as tag: FrameTag) {
        guard start < ends.count else { return }
        if tags.isEmpty {
            guard tag != .neutral else { return }
            tags.reserveCapacity(ends.capacity)
            tags.append(contentsOf: repeatElement(.neutral, count: start))
            tags.append(contentsOf: repeatElement(tag, count: ends.count - start))
        } else {
            for index in start..<ends.count { tags[index] = tag }
        }
    }

    /// Keeps `tags` parallel to `ends` once the batch carries tags (an untagged datagram is neutral).
    @inline(__always) private mutating func datagramAppended() {
        if !tags.isEmpty { tags.append(.neutral) }
    }

    /// A copy of one datagram, for tests and tools.
    public subscript(index: Int) -> [UInt8] { Array(storage[range(of: index)]) }

    /// Appends a copy of `datagram`.
    public mutating func append(_ datagram: UnsafeRawBufferPointer) {
        storage.append(contentsOf: datagram)
        ends.append(storage.count)
        datagramAppended()
    }

    /// Appends a copy of `datagram`.
    public mutating func append(_ datagram: [UInt8]) {
        storage.append(contentsOf: datagram)
        ends.append(storage.count)
        datagramAppended()
    }

    /// Appends one data frame: the 32-byte header, then `payload`, copied once.
    public mutating func appendDataFrame(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(byteCount: DataFrameHeader.size, alignment: 8) { scratch in
            header.encode(into: scratch)
            storage.append(contentsOf: UnsafeRawBufferPointer(scratch))
        }
        storage.append(contentsOf: payload)
        ends.append(storage.count)
        datagramAppended()
    }

    /// Appends a copy of `datagram`, tagged.
    public mutating func append(_ datagram: [UInt8], tag: FrameTag) {
        append(datagram)
        self.tag(from: ends.count - 1, as: tag)
    }

    /// Appends `datagram` with 4 bytes in front of it (a relay envelope), copied once.
    public mutating func append(_ datagram: UnsafeRawBufferPointer, prefix: (UInt8, UInt8, UInt8, UInt8)) {
        beginDatagram(prefix: prefix)
        storage.append(contentsOf: datagram)
        ends.append(storage.count)
        datagramAppended()
    }

    /// Starts the next datagram with 4 bytes (a relay envelope): the next single-datagram append
    /// completes it, so a frame written behind an envelope is copied once. Until then the bytes
    /// count in ``byteCount`` but belong to no datagram.
    public mutating func beginDatagram(prefix: (UInt8, UInt8, UInt8, UInt8)) {
        storage.append(prefix.0)
        storage.append(prefix.1)
        storage.append(prefix.2)
        storage.append(prefix.3)
    }

    /// Appends one datagram that `body` writes in place at the end of the storage, if it returns
    /// true (otherwise what it wrote is removed): for encoders that would build it elsewhere and copy it in.
    public mutating func appendInPlace(_ body: (inout [UInt8]) -> Bool) {
        let start = storage.count
        if body(&storage) {
            ends.append(storage.count)
            datagramAppended()
        } else {
            storage.removeSubrange(start...)
        }
    }

    /// Appends every datagram of `other`, in order.
    public mutating func append(contentsOf other: DatagramBatch) {
        let base = storage.count
        storage.append(contentsOf: other.storage)
        let start = ends.count
        for end in other.ends { ends.append(base + end) }
        if !other.tags.isEmpty {
            if tags.isEmpty { tags.append(contentsOf: repeatElement(.neutral, count: start)) }
            tags.append(contentsOf: other.tags)
        } else if !tags.isEmpty {
            tags.append(contentsOf: repeatElement(.neutral, count: other.count))
        }
    }

    /// Removes every datagram, keeping the storage for reuse by default.
    public mutating func removeAll(keepingCapacity: Bool = true) {
        storage.removeAll(keepingCapacity: keepingCapacity)
        ends.removeAll(keepingCapacity: keepingCapacity)
        tags.removeAll(keepingCapacity: keepingCapacity)
    }
}
