import ConduitCore

/// Names one invitation on one relay. The inviter gets it back from `invite`; every event of the
/// invitation carries it.
///
/// IDs are unique for the life of an `InvitationBook` (a counter through a bijective mixer, so
/// two invitations never share one) and not derivable from one another without the book's
/// secret key. That is a courtesy, not the security boundary: the book refuses an answer or a cancel from any peer that
/// is not a party of the invitation, whatever ID it presents (see `InvitationBook`).
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

