@_spi(Benchmarks) import ConduitCore

/// Frames ready for the upper layer, in delivery order, their payloads back to back in one
/// `DatagramBatch`: an in-order frame is copied once, from the packet into the queue, and the
/// upper layer usually takes the queue's batch whole (``ARQEngine/pollDeliveries(now:into:maxFrames:)``)
/// instead of an array per frame.
struct LinkDeliveryQueue: Sendable {
    struct Entry: Sendable {
        let channel: UInt32
        let sequence: UInt32
        /// Receiver-clock deadline, for frames that carry a lifetime.
        let expiresAt: ConduitInstant?
    }

    private var frames = DatagramBatch()
    private var entries: [Entry] = []
    /// Entries before this one were taken.
    private var head = 0
    /// Entries queued with a lifetime: while there is none, nothing can expire in the queue.
    private var withLifetime = 0

    var isEmpty: Bool { head == entries.count }
    /// Frames held, taken ones not yet dropped included (for tests of the compaction).
    var storedFrames: Int { entries.count }
    var count: Int { entries.count - head }

    mutating func append(channel: UInt32, sequence: UInt32, payload: UnsafeRawBufferPointer, expiresAt: ConduitInstant?) {
        frames.append(payload)
        PayloadCopies.countReceive(payload.count)
        entries.append(Entry(channel: channel, sequence: sequence, expiresAt: expiresAt))
        if expiresAt != nil { withLifetime += 1 }
    }

    mutating func append(_ pending: LinkPendingDelivery) {
        pending.bytes.withUnsafeBytes {
            append(channel: pending.channel, sequence: pending.sequence, payload: $0, expiresAt: pending.expiresAt)
        }
    }

    /// The first frame, removed, with its payload copied out.
    mutating func popFirst() -> (entry: Entry, bytes: [UInt8])? {
        guard !isEmpty else { return nil }
        let entry = entries[head]
        let bytes = frames[head]
        PayloadCopies.countReceive(bytes.count)
        head += 1
        if entry.expiresAt != nil { withLifetime -= 1 }
        if isEmpty {
            reset()
        } else if head >= 64, head * 2 >= entries.count {
            compact()
        }
        return (entry, bytes)
    }

    /// Moves every frame into `batch` when it can be done by handing the queue's batch over
    /// (nothing taken yet, nothing that may expire, `batch` empty, at most `maxFrames`); returns
    /// how many frames and payload bytes moved, or nil when the caller must pop one by one.
    mutating func takeAll(into batch: inout DatagramBatch, maxFrames: Int) -> (frames: Int, bytes: Int)? {
        guard head == 0, withLifetime == 0, batch.isEmpty, !entries.isEmpty, entries.count <= maxFrames else { return nil }
        let moved = (frames.count, frames.byteCount)
        let wanted = (bytes: min(frames.byteCount, 1 << 16), frames: min(frames.count, 256))
        // The caller's empty batch becomes the queue's next one: a caller that reuses its batch
        // (a caller-owned buffer) costs no allocation. Where it brings a new one, the next batch
        // starts at the size this one reached (up to 64 KiB), so that it does not grow step by
        // step, nor reserve a reader's worst backlog every time.
        swap(&batch, &frames)
        frames.removeAll(keepingCapacity: true)
        if frames.storage.capacity < wanted.bytes || frames.ends.capacity < wanted.frames {
            frames = DatagramBatch(reservingBytes: wanted.bytes, datagrams: wanted.frames)
        }
        entries.removeAll(keepingCapacity: true)
        return moved
    }

    /// Drops the frames already taken, for a reader that takes one at a time while more keep
    /// arriving (the queue would otherwise never empty and never shrink). Each frame moves at
    /// most once per halving, so the cost per frame stays constant.
    private mutating func compact() {
        var kept = DatagramBatch(reservingBytes: frames.byteCount - frames.range(of: head - 1).upperBound, datagrams: entries.count - head)
        for index in head..<entries.count { frames.withDatagram(index) { kept.append($0) } }
        PayloadCopies.countReceive(kept.byteCount)
        frames = kept
        entries.removeFirst(head)
        head = 0
    }

    private mutating func reset() {
        frames.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        head = 0
        withLifetime = 0
    }
}
