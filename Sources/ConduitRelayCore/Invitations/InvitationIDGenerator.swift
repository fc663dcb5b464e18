import ConduitRooms
import ConduitCore

/// Makes the IDs of one book: `mix(mix(counter ^ k1) ^ k2)`, where `mix` is SplitMix64's
/// finalizer, a bijection on `UInt64`, and `k1`, `k2` come from the host's key. Every step is a
/// bijection, so distinct counters give distinct IDs and uniqueness needs no lookup. The two
/// rounds keep a peer that saw some IDs from inverting one and stepping the counter to the next
/// (one round would allow it). Not a cryptographic guarantee, and not needed as one: see
/// `InvitationID`.
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
