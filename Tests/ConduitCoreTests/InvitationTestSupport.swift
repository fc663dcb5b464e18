import ConduitCore

import ConduitRooms
import ConduitRelayCore
// Helpers for the invitation tests: virtual time, short names, and error codes out of typed throws.

enum Inv {
    static let alice: PeerID = "alice"
    static let bob: PeerID = "bob"
    static let carol: PeerID = "carol"
    static let dave: PeerID = "dave"
    static let eve: PeerID = "eve"

    /// A book with a fixed ID key, so every run makes the same IDs.
    static func book(_ configure: (inout InvitationBook.Configuration) -> Void = { _ in }) -> InvitationBook {
        var configuration = InvitationBook.Configuration()
        configure(&configuration)
        return InvitationBook(configuration: configuration, idKey: 0x5EED_1DEA_0000_0008)
    }

    /// `seconds` after the origin of virtual time, plus `nanoseconds`.
    static func t(_ seconds: UInt64, plus nanoseconds: UInt64 = 0) -> ConduitInstant {
        ConduitInstant(nanoseconds: seconds * 1_000_000_000 + nanoseconds)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func to(_ peer: PeerID, _ event: InvitationEvent) -> InvitationDelivery {
        InvitationDelivery(to: peer, event: event)
    }

    /// The same event to each peer, in order.
    static func each(_ peers: [PeerID], _ event: InvitationEvent) -> [InvitationDelivery] {
        peers.map { InvitationDelivery(to: $0, event: event) }
    }
}

/// The refusal's code, or nil when `body` succeeded. (Untyped `throws` here: closures inside
/// `#expect` are not inferred as typed-throwing; any other error maps to a code no test expects.)
func refusal(_ body: () throws -> Void) -> InvitationError.Code? {
    do {
        try body()
        return nil
    } catch let error as InvitationError {
        return error.code
    } catch {
        return InvitationError.Code(rawValue: .max)
    }
}
