/// The first byte of every Conduit frame: the wire version in the high nibble, the frame kind in
/// the low nibble. See `docs/wire-format.md`.
public enum WireVersion {
    public static let current: UInt8 = 1
}

public enum FrameKind: UInt8, Sendable, Hashable {
    case data = 0
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
