/// Remembers which recent message IDs of one stream have already been delivered, so a duplicate
/// fragment arriving after its message completed is recognised and dropped instead of starting a
/// new, never-completing message (or delivering the message twice).
///
/// Like the SRTP replay window (RFC 3711 section 3.3.2): the `size` IDs at and below the highest
/// completed one, in serial-number arithmetic so 32-bit IDs may wrap. The bitmap is a ring indexed
/// by `id % size`, so moving the window forward clears only the bits it passes over (usually one)
/// instead of shifting the whole map. IDs older than the window count as already delivered: a
/// sender's message IDs only grow, so such a fragment can only be a very late duplicate.
public struct CompletedMessageWindow: Sendable, Hashable {
    /// Message IDs remembered at and below the highest completed one.
    public static let size = 4096
    private static let mask = UInt32(size - 1)
    private var highest: UInt32?
    private var ring: [UInt64]

    /// Makes an empty window: nothing completed yet.
    public init() {
        ring = []
    }

    /// True if `id` completed already, or is too old to tell.
    public func contains(_ id: UInt32) -> Bool {
        guard let highest else { return false }
        let behind = highest &- id
        if behind >= UInt32(1) << 31 { return false }  // ahead of the window
        guard behind < UInt32(Self.size) else { return true }
        return test(id)
    }

    /// Records `id` as delivered, moving the window forward if it is the newest.
    public mutating func insert(_ id: UInt32) {
        guard let current = highest else {
            highest = id
            ring = [UInt64](repeating: 0, count: Self.size / 64)
            set(id)
            return
        }
        let behind = current &- id
        if behind < UInt32(1) << 31 {
            if behind < UInt32(Self.size) { set(id) }
            return
        }
        // Moving forward: forget the IDs that fall out of the window, i.e. the ring slots between
        // the old highest and the new one.
        let distance = id &- current
        if distance >= UInt32(Self.size) {
            for i in ring.indices { ring[i] = 0 }
        } else {
            var slot = current &+ 1
            while slot != id {
                clear(slot)
                slot &+= 1
            }
            clear(id)
        }
        highest = id
        set(id)
    }

    private func test(_ id: UInt32) -> Bool {
        let index = Int(id & Self.mask)
        return ring[index >> 6] & (1 << UInt64(index & 63)) != 0
    }

    private mutating func set(_ id: UInt32) {
        let index = Int(id & Self.mask)
        ring[index >> 6] |= 1 << UInt64(index & 63)
    }

    private mutating func clear(_ id: UInt32) {
        let index = Int(id & Self.mask)
        ring[index >> 6] &= ~(1 << UInt64(index & 63))
    }
}
