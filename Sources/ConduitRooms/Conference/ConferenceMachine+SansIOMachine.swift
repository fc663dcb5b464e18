public import ConduitCore

extension ConferenceMachine: SansIOMachine {
    public typealias Event = ConferenceEvent

    /// ``nextTransmit(now:)`` and ``nextTimeout()`` together, as `SansIOMachine` asks.
    public mutating func deadlines(now: ConduitInstant) -> (transmit: ConduitInstant?, timeout: ConduitInstant?) {
        (nextTransmit(now: now), nextTimeout())
    }
}
