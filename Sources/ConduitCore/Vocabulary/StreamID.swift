/// An application-defined stream identifier, fixed at design time and shared by both sides.
///
/// Valid identifiers lie in `100...999` (LINE Planet data-session contract). A `StreamID` may be
/// built from any integer so that an out-of-range value reaches the API and is refused there with
/// ``DataSessionFailReason/invalidId`` rather than trapping at the call site.
public struct StreamID: RawRepresentable, Hashable, Sendable, Comparable, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    /// The stream IDs apps may use: 100…999.
    public static let validRange: ClosedRange<Int> = 100...999

    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Wraps `value` unchecked; ``isValid`` tells whether it is in range.
    public init(_ value: Int) { self.rawValue = value }
    public init(integerLiteral value: Int) { self.rawValue = value }

    /// A stream ID that is known to be valid, or a typed error naming the bad value.
    public static func validated(_ value: Int) throws(ConduitError) -> StreamID {
        guard validRange.contains(value) else {
            throw ConduitError(.invalidStreamID, "stream ID \(value) is outside 100...999")
        }
        return StreamID(value)
    }

    /// Whether the ID is within ``validRange``.
    public var isValid: Bool { Self.validRange.contains(rawValue) }

    /// The 16-bit wire value. Only valid IDs are ever encoded.
    @inlinable package var wireValue: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (lhs: StreamID, rhs: StreamID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}
