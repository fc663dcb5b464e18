import ConduitRelayCore

extension RelayStatistics {
    /// Adds `other`'s counters to these (a shard group's total). A counter added to
    /// `RelayStatistics` must be listed in ``counters`` to be summed.
    mutating func add(_ other: RelayStatistics) {
        for counter in Self.counters { self[keyPath: counter] += other[keyPath: counter] }
        for (kind, count) in other.refusals { refusals[kind, default: 0] += count }
        for counter in Self.clusterCounters { cluster[keyPath: counter] += other.cluster[keyPath: counter] }
    }

    private static var counters: [WritableKeyPath<RelayStatistics, Int>] {
        [
            \.framesAccepted, \.framesRelayed, \.bytesRelayed, \.unreliableDropped, \.droppedUnsupported, \.slowReceiversDisconnected, \.framesAfterIsolation, \.isolatedReadsCutShort,
            \.sendersPaused, \.laggingReceivers, \.vanished, \.joinDeadlinesMissed, \.pendingEvicted, \.joinsRateLimited, \.joins,
            \.leaves, \.peerListUpdatesSent, \.extensionsRelayed, \.expiredInRelay, \.tracksPublished,
        ]
    }

    /// Every counter of `RelayClusterStatistics` (one added there must be listed here).
    private static var clusterCounters: [WritableKeyPath<RelayClusterStatistics, Int>] {
        [
            \.messagesPublished, \.framesForwarded, \.messagesReceived, \.framesReceived, \.gaps, \.messagesLost, \.staleDropped,
            \.malformed, \.dataLost, \.sessionsReportedLost, \.unknownSender, \.peerConflicts, \.unknownSubgroup,
            \.unknownChannel, \.channelMismatches, \.unknownTrack, \.overLimit, \.relaysTimedOut, \.pressureAnnounced,
            \.remotePressureApplied, \.extensionsForwarded, \.extensionsReceived, \.nodeMessagesPublished,
            \.nodeMessagesReceived, \.nodeGaps, \.nodeMessagesResent, \.nodeMessagesRepaired, \.nodeMessagesLost,
            \.nodeDuplicates, \.nodeMalformed, \.nodesTimedOut, \.nodesOverLimit, \.onlineOverLimit, \.invitationEventsForwarded,
            \.invitationEventsReceived, \.invitationRequestsForwarded, \.invitationRequestsServed,
            \.invitationRequestsUnanswered, \.invitationRepliesUnmatched, \.invitationsLostWithRelay, \.invitationProxiesEvicted,
            \.rosterRecordsApplied, \.rosterMalformed, \.rosterSkipped, \.rosterGaps, \.rosterRecordsPublished, \.rosterJoinsRefused, \.heldForRoster, \.heldDropped,
            \.rosterRemovedUnread,
        ]
    }
}
