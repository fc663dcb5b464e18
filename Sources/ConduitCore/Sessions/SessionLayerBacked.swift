/// A machine whose data sessions are a ``SessionLayer`` (the call's and the conference's): the
/// questions about its sessions that both answer alike, written once. Package-wide, for the
/// engines that adapt the machines and for tests; apps see sessions through the runtime's objects.
package protocol SessionLayerBacked {
    associatedtype Host: SessionHost
    var sessions: SessionLayer<Host> { get }
}

extension SessionLayerBacked {
    /// The type of outbound session `key`, or nil if there is none.
    package func outboundType(_ key: SessionKey) -> SessionType? { sessions.outboundType(key) }

    /// Why outbound session `key` closed, or nil while it is open (or unknown).
    package func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { sessions.outboundCloseReason(key) }

    /// How far outbound session `key` has got with what was accepted before `mark` (a flush).
    package func flushProgress(_ key: SessionKey, since mark: OutboundFlushMark?) -> OutboundFlushProgress? { sessions.flushProgress(key, since: mark) }

    /// The type of inbound session `key` as announced, or nil if none was announced.
    package func inboundType(_ key: SessionKey) -> SessionType? { sessions.inboundType(key) }

    /// Whether the app made inbound session `key`.
    package func isInboundAccepted(_ key: SessionKey) -> Bool { sessions.isInboundAccepted(key) }

    /// Outbound session `key`'s counters and queue at `now`, or nil if there is none.
    package func outboundStatistics(_ key: SessionKey, now: ConduitInstant) -> OutboundDataSessionStatistics? {
        sessions.outboundStatistics(key, now: now)
    }

    /// Announced stream `key`'s counters (kept after it closes), or nil if it was never announced.
    package func inboundStatistics(_ key: SessionKey) -> InboundDataSessionStatistics? { sessions.inboundStatistics(key) }
}
