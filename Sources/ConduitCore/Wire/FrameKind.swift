/// The first byte of every Conduit frame: the wire version in the high nibble, the frame kind in
/// the low nibble. See `docs/wire-format.md`.
public enum WireVersion {
    /// The wire version this build writes and reads.
    public static let current: UInt8 = 1
}

/// What follows a frame's version byte.
public enum FrameKind: UInt8, Sendable, Hashable {
    /// A data fragment of a session (``DataFrameHeader``).
    case data = 0
    /// A control frame (``ControlFrame``): hello, goodbye, session opens and closes.
    case control = 1

    /// Reads the version and kind from a datagram's first byte.
    @inlinable
    public static func peek(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> FrameKind {
        guard let first = bytes.first else { throw .truncated(needed: 1, got: 0) }
        let version = first >> 4
        guard version == WireVersion.current else { throw .unsupportedVersion(version) }
        guard let kind = FrameKind(rawValue: first & 0x0F) else { throw .unknownFrameKind(first & 0x0F) }
        return kind
    }
}
