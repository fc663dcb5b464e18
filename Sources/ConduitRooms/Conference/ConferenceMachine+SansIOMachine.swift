public import ConduitCore

extension ConferenceMachine: SansIOMachine {
    public typealias Event = ConferenceEvent

    /// ``nextTransmit(now:)`` and ``nextTimeout()`` together, as `SansIOMachine` asks.
    public mutating func deadlines(now: ConduitInstant) -> (transmit: ConduitInstant?, timeout: ConduitInstant?) {
        (nextTransmit(now: now), nextTimeout())
    }

    /// Whether a session send landed in an empty queue since the last call (the session layer
    /// keeps the flag): only then can the deadlines have moved earlier because of sends. Track and
    /// channel frames have no timeout deadline of their own, and their sends wake the pump anyway.
    public mutating func takeQueueHeadAdded() -> Bool { sessions.takeQueueHeadAdded() }
}

extension ConferenceMachine {
    /// What the conference's sessions hold now (see `SessionFootprint`).
    package var footprint: SessionFootprint { sessions.footprint }
    /// Bytes of track frames queued to send.
    package var trackQueuedBytesNow: Int { trackQueuedBytes }
    /// Track and labeled-channel reassemblers (one per sender and track or channel).
    package var mediaReassemblers: Int { trackReassemblers.count + channelReassemblers.count }
}
