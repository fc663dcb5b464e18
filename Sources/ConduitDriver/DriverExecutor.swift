public import ConduitCore

/// The executor a driving actor runs on: the link's `TransportLink.preferredExecutor` when it
/// has one (a UDP link's event loop, so a batch goes from socket to machine and back without a
/// thread hop), else a default actor executor of its own. An actor returns
/// ``unownedExecutor`` from its own `unownedExecutor`.
public final class DriverExecutor: Sendable {
    private let preferred: (any SerialExecutor)?
    /// Lends its default executor when the link has none.
    private let donor = ExecutorDonor()

    /// The executor for an actor that drives `link`: the link's own when `followsLink` (an actor
    /// the link's I/O calls into for every batch, such as the reliable link), else a default
    /// executor of its own.
    public init(for link: any TransportLink, followsLink: Bool = true) {
        preferred = followsLink ? link.preferredExecutor : nil
    }

    /// The link's executor, or the default one lent here.
    public var unownedExecutor: UnownedSerialExecutor {
        preferred?.asUnownedSerialExecutor() ?? donor.unownedExecutor
    }
}

/// An actor with nothing in it, whose default executor an actor with a custom executor borrows
/// when it has no better one (SE-0392's executor sharing).
actor ExecutorDonor {}
