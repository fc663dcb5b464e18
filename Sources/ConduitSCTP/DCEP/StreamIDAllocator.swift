#if SCTP
/// Chooses SCTP stream IDs for the channels this end opens (RFC 8832 section 6): the DTLS client
/// uses even IDs and the server odd ones. Without DTLS, the side that connects takes the even
/// ones; the peer may open on either parity, and the streams it holds are ``reserve(_:)``d here so
/// that we never pick them (see `DCEPStreamPolicy`).
///
/// A closed channel's ID comes back only once its stream has been reset in both directions
/// (RFC 8831 section 6.7, RFC 6525), so a late message of the old channel can never be read as
/// one of a new channel. Lowest free ID first, so IDs stay small and get reused.
public struct StreamIDAllocator: Sendable, Hashable {
    /// Whether this end connected (and so takes even stream IDs).
    public let isClient: Bool
    /// Streams negotiated for the association: IDs are below this.
    public let streamCount: Int
    private var inUse: Set<UInt16> = []

    /// Makes an allocator with no ID in use, for the side `isClient` says, over `streamCount` negotiated streams.
    public init(isClient: Bool, streamCount: Int) {
        self.isClient = isClient
        self.streamCount = streamCount
    }

    /// Whether `id` has this end's parity (the IDs ``allocate()`` picks from).
    public func isOurs(_ id: UInt16) -> Bool { (id % 2 == 0) == isClient }

    /// Stream IDs now held (open, or waiting for their reset): ours, and those reserved for the peer.
    public var count: Int { inUse.count }

    /// The lowest free ID of our parity, or nil when every one is taken.
    public mutating func allocate() -> UInt16? {
        var id = isClient ? 0 : 1
        while id < streamCount {
            if !inUse.contains(UInt16(id)) {
                inUse.insert(UInt16(id))
                return UInt16(id)
            }
            id += 2
        }
        return nil
    }

    /// Marks `id` (of either parity) as held by a channel the peer opened, until ``release(_:)``.
    public mutating func reserve(_ id: UInt16) { inUse.insert(id) }

    /// Returns `id` once its stream is reset both ways.
    public mutating func release(_ id: UInt16) { inUse.remove(id) }
}
#endif
