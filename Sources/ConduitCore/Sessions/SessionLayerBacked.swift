/// A machine whose data sessions are a ``SessionLayer`` (the call's and the conference's): the
/// questions about its sessions that both answer alike, and the operations both perform alike,
/// written once. Package-wide, for the engines that adapt the machines and for tests; apps see
/// sessions through the runtime's objects. (`CallMachine` also offers the operations publicly,
/// for apps that drive a call machine themselves, as in `ConduitTesting`'s `SansIOPair`.)
package protocol SessionLayerBacked {
    associatedtype Host: SessionHost
    var sessions: SessionLayer<Host> { get set }
    /// Whether the machine's control plane is up (joined, connected): inbound sessions are made
    /// only then.
    var isConnected: Bool { get }
}

extension SessionLayerBacked {
    /// Offers one `send` to outbound session `key`'s queue. Size and state are checked now, so an
    /// oversize or closed send fails at the call instead of vanishing later.
    package mutating func enqueue(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, now: ConduitInstant) -> EnqueueResult {
        sessions.enqueue(key, bytes: bytes, timestamp: timestamp, now: now)
    }

    /// Closes outbound session `key` gracefully: sends are refused from now on, what was accepted
    /// still goes, then the close.
    package mutating func closeOutbound(_ key: SessionKey) { sessions.closeOutbound(key) }

    /// LINE Planet `makeInboundDataSession`, after `dataSessionIncoming` for `key`. `expectedType`,
    /// when given, must match what the sender announced (else `invalidType`).
    package mutating func makeInbound(_ key: SessionKey, expectedType: SessionType? = nil) -> DataSessionFailReason {
        sessions.makeInbound(key, expectedType: expectedType, hostIsConnected: isConnected)
    }
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
