/// A sans-IO machine that takes datagrams from one link, each at the instant the driver says.
/// Taking an array, or every datagram of a batch, follows from taking one in place.
public protocol DatagramHandling {
    /// Takes one datagram, valid only during the call. Anything malformed is counted and dropped.
    mutating func handle(datagram: UnsafeRawBufferPointer, now: ConduitInstant)
}

extension DatagramHandling {
    /// Takes one datagram.
    @inlinable public mutating func handle(datagram: [UInt8], now: ConduitInstant) {
        datagram.withUnsafeBytes { handle(datagram: $0, now: now) }
    }

    /// Takes every datagram of a batch, in order.
    @inlinable public mutating func handle(batch: DatagramBatch, now: ConduitInstant) {
        batch.forEachDatagram { handle(datagram: $0, now: now) }
    }
}
