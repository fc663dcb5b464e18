/// Remembers which recent message IDs of one stream have already been delivered, so a duplicate
/// fragment arriving after its message completed is recognised and dropped instead of starting a
/// new, never-completing message (or delivering the message twice).
///
/// Like the SRTP replay window (RFC 3711 section 3.3.2): a bitmap of the `size` IDs at and below
/// the highest completed one, in serial-number arithmetic so 32-bit IDs may wrap. IDs older than
/// the window count as already delivered: a sender's message IDs only grow, so such a fragment
/// can only be a very late duplicate.
public struct CompletedMessageWindow: Sendable, Hashable {
    public static let size = 4096
    private var highest: UInt32?
    /// Bit `i` set: message `highest - i` completed.
    private var bits: [UInt64]

    public init() {
        bits = []
    }

    /// True if `id` completed already, or is too old to tell.
    public func contains(_ id: UInt32) -> Bool {
        guard let highest else { return false }
        let behind = highest &- id
        if behind >= UInt32(1) << 31 { return false }  // ahead of the window
        guard behind < UInt32(Self.size) else { return true }
        let index = Int(behind)
        return bits[index >> 6] & (1 << UInt64(index & 63)) != 0
    }

    public mutating func insert(_ id: UInt32) {
        guard let current = highest else {
            highest = id
            bits = [UInt64](repeating: 0, count: Self.size / 64)
            bits[0] = 1
            return
        }
        let behind = current &- id
        if behind < UInt32(1) << 31 {
            guard behind < UInt32(Self.size) else { return }
            let index = Int(behind)
            bits[index >> 6] |= 1 << UInt64(index & 63)
        } else {
            shift(by: Int(id &- current))
            highest = id
            bits[0] |= 1
        }
    }

    /// Moves the window forward by `distance` IDs.
    private mutating func shift(by distance: Int) {
        guard distance < Self.size else {
            for i in bits.indices { bits[i] = 0 }
            return
        }
        let words = distance >> 6
        let offset = UInt64(distance & 63)
        for i in stride(from: bits.count - 1, through: 0, by: -1) {
            let source = i - words
            var value: UInt64 = source >= 0 ? bits[source] << offset : 0
            if offset > 0, source - 1 >= 0 { value |= bits[source - 1] >> (64 - offset) }
            bits[i] = value
        }
    }
}
