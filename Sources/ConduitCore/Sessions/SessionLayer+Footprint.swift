/// What a session layer holds now, for checks that its caps hold whatever the peer sends (the
/// fuzz targets read it after every step).
package struct SessionFootprint: Sendable, Hashable {
    /// Announced inbound streams (accepted or not), and the most bytes held for one of them that
    /// the app has not made yet.
    package var inboundSessions = 0, largestPendingInboundBytes = 0
    /// Outbound sessions (open or closed), and the most bytes queued in one of them.
    package var outboundSessions = 0, largestQueuedBytes = 0
    /// Reassemblers (one per sender); the most bytes one reserves for incomplete messages, and
    /// the most incomplete messages one holds.
    package var reassemblers = 0, largestReassemblyBytes = 0, largestIncompleteMessages = 0
    /// Control frames waiting to be written, and events the driver has not taken yet.
    package var controlFramesQueued = 0, eventsQueued = 0

    /// Nothing held.
    package init() {}
}

extension SessionLayer {
    /// What the layer holds now.
    package var footprint: SessionFootprint {
        var footprint = SessionFootprint()
        footprint.inboundSessions = inbound.count
        footprint.largestPendingInboundBytes = inbound.values.reduce(0) { max($0, $1.pendingBytes) }
        footprint.outboundSessions = outbound.count
        footprint.largestQueuedBytes = outbound.values.reduce(0) { max($0, $1.queuedBytes) }
        footprint.reassemblers = reassemblers.count
        footprint.largestReassemblyBytes = reassemblers.values.reduce(0) { max($0, $1.bufferedBytes) }
        footprint.largestIncompleteMessages = reassemblers.values.reduce(0) { max($0, $1.incompleteMessages) }
        footprint.controlFramesQueued = controlOut.count
        footprint.eventsQueued = events.count
        return footprint
    }
}

extension CallMachine {
    /// What the call's sessions hold now (see ``SessionFootprint``).
    package var footprint: SessionFootprint { sessions.footprint }
    /// Subgroups the peer announced (at most ``maxRemoteSubgroups``).
    package var remoteSubgroupCount: Int { remoteSubgroups.count }
}
