/// Names one invitation on one relay. The inviter gets it back from `invite`; every event of the
/// invitation carries it.
///
/// IDs are unique for the life of an ``InvitationBook`` (a counter through a bijective mixer, so
/// two invitations never share one) and not derivable from one another without the book's
/// secret key. That is a courtesy, not the security boundary: the book refuses an answer or a cancel from any peer that
/// is not a party of the invitation, whatever ID it presents (see ``InvitationBook``).
public struct InvitationID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Never 0: the wire uses 0 for "no invitation".
    public let rawValue: UInt64

    /// `nil` for 0, which names no invitation.
    public init?(rawValue: UInt64) {
        guard rawValue != 0 else { return nil }
        self.rawValue = rawValue
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// 16 hex digits, the form the command line prints and parses.
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Parses the 16-hex-digit form (shorter is accepted); `nil` for anything else or 0.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 16, let value = UInt64(text, radix: 16) else { return nil }
        self.init(rawValue: value)
    }
}

/// Makes the IDs of one book: `mix(mix(counter ^ k1) ^ k2)`, where `mix` is SplitMix64's
/// finalizer, a bijection on `UInt64`, and `k1`, `k2` come from the host's key. Every step is a
/// bijection, so distinct counters give distinct IDs and uniqueness needs no lookup. The two
/// rounds keep a peer that saw some IDs from inverting one and stepping the counter to the next
/// (one round would allow it). Not a cryptographic guarantee, and not needed as one: see
/// ``InvitationID``.
struct InvitationIDGenerator: Sendable {
    private let k1: UInt64
    private let k2: UInt64
    private var counter: UInt64 = 0

    init(key: UInt64) {
        k1 = key
        k2 = Self.mix(key ^ 0x9E37_79B9_7F4A_7C15)
    }

    static func mix(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next() -> InvitationID {
        while true {
            counter &+= 1
            // 0 is reserved; skipping it costs one counter value in 2^64.
            if let id = InvitationID(rawValue: Self.mix(Self.mix(counter ^ k1) ^ k2)) { return id }
        }
    }
}
