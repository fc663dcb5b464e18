import DequeModule
import ConduitCore

/// What a sent packet carried that matters once it is acknowledged or lost.
enum LinkSentItem: Sendable, Hashable {
    /// A DATA frame, by its handle in ``ARQEngine``'s frame table.
    case data(UInt64)
    /// One part of a frame sent in parts (``LinkFrameParts``).
    case dataPart(UInt64, part: UInt16)
    case forward(channel: UInt32, cumulativeSequence: UInt32)
    case ping
}

/// What a packet carried, kept inline for the usual one item (a heap array per packet sent was
/// an allocation, and reference counting on every copy of the packet's record).
struct LinkSentItems: Sendable, Hashable, Sequence, ExpressibleByArrayLiteral {
    private var first: LinkSentItem?
    private var more: [LinkSentItem] = []

    init() {}

    init(arrayLiteral elements: LinkSentItem...) {
        for element in elements { append(element) }
    }

    var isEmpty: Bool { first == nil }

    mutating func append(_ item: LinkSentItem) {
        if first == nil { first = item } else { more.append(item) }
    }

    struct Iterator: IteratorProtocol {
        fileprivate let items: LinkSentItems
        fileprivate var index = 0

        mutating func next() -> LinkSentItem? {
            defer { index += 1 }
            if index == 0 { return items.first }
            return index - 1 < items.more.count ? items.more[index - 1] : nil
        }
    }

    func makeIterator() -> Iterator { Iterator(items: self) }
}

/// One ack-eliciting packet sent (RFC 9002 appendix A.1.1, `sent_packets`).
struct LinkSentPacket: Sendable, Hashable {
    enum State: Sendable, Hashable { case outstanding, acknowledged, lost }

    let number: UInt64
    let timeSent: ConduitInstant
    /// Bytes on the wire.
    let size: Int
    /// Was the sender application- (or flow-control-) limited when it sent this packet? Then its
    /// acknowledgement does not grow the congestion window (RFC 9002 section 7.8).
    let isAppLimited: Bool
    /// The delivery rate estimator's state when it was sent.
    let delivery: LinkDeliverySnapshot
    var items: LinkSentItems
    /// Largest Acknowledged of the ACK frame this packet carried, if any: once the packet is
    /// acknowledged, the peer is known to have seen that ACK.
    var ackLargest: UInt64?
    var state = State.outstanding
}

/// The unacknowledged ack-eliciting packets, in packet-number order. ACK-only packets are not
/// kept: they are neither in flight nor retransmitted (RFC 9002 section 2).
///
/// Acknowledged or lost packets in the middle stay as tombstones until they reach the front, so
/// lookups stay a binary search over a deque; the number of entries is capped by the link
/// (`maxUnackedPackets`).
struct LinkSentPacketLedger: Sendable {
    private(set) var packets = Deque<LinkSentPacket>()
    /// Entries still outstanding.
    private(set) var outstandingCount = 0
    private(set) var timeOfLastAckEliciting: ConduitInstant?
    /// Acknowledged entries still kept (behind an outstanding one): RACK's `segs_sacked`.
    private(set) var acknowledgedCount = 0

    var entryCount: Int { packets.count }
    var isEmpty: Bool { outstandingCount == 0 }

    mutating func append(_ packet: LinkSentPacket) {
        packets.append(packet)
        outstandingCount += 1
        timeOfLastAckEliciting = packet.timeSent
    }

    /// Index of the first entry whose number is at least `number`.
    func firstIndex(atLeast number: UInt64) -> Int {
        var low = 0
        var high = packets.count
        while low < high {
            let mid = (low + high) / 2
            if packets[mid].number < number { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Marks the outstanding packets in `range` acknowledged and hands each to `body`.
    mutating func acknowledge(_ range: ClosedRange<UInt64>, _ body: (LinkSentPacket) -> Void) {
        var index = firstIndex(atLeast: range.lowerBound)
        while index < packets.count, packets[index].number <= range.upperBound {
            if packets[index].state == .outstanding {
                packets[index].state = .acknowledged
                outstandingCount -= 1
                acknowledgedCount += 1
                // The items move out to `body` (a swap, no reference counting); the tombstone
                // keeps none.
                var items = LinkSentItems()
                swap(&items, &packets[index].items)
                let packet = packets[index]
                body(LinkSentPacket(
                    number: packet.number, timeSent: packet.timeSent, size: packet.size,
                    isAppLimited: packet.isAppLimited, delivery: packet.delivery, items: items, ackLargest: packet.ackLargest, state: .acknowledged
                ))
            }
            index += 1
        }
    }

    mutating func markLost(at index: Int) -> LinkSentPacket {
        let packet = packets[index]
        packets[index].state = .lost
        packets[index].items = []
        outstandingCount -= 1
        return packet
    }

    /// Drops tombstones from the front.
    mutating func compact() {
        while let first = packets.first, first.state != .outstanding {
            if first.state == .acknowledged { acknowledgedCount -= 1 }
            packets.removeFirst()
        }
    }

    /// The oldest packet not acknowledged or declared lost (TCP's SND.UNA), once compacted.
    var firstOutstandingNumber: UInt64? { packets.first?.number }

    subscript(index: Int) -> LinkSentPacket { packets[index] }

    /// The oldest outstanding packet, for PTO probes.
    var oldestOutstanding: LinkSentPacket? { packets.first { $0.state == .outstanding } }
}
