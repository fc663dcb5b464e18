/// Counters of the relay's traffic with the rest of its cluster. Nothing NATS loses goes
/// unnoticed: every lost message shows here (`messagesLost`), found by its sequence number.
public struct RelayClusterStatistics: Sendable, Hashable {
    /// Messages handed to the driver to publish, and routed frames among them.
    public var messagesPublished = 0
    /// Routed frames published for members on other relays.
    public var framesForwarded = 0
    /// Messages from other relays about rooms hosted here.
    public var messagesReceived = 0
    /// Routed frames from other relays handed to members here (each counted once, however many
    /// members got it).
    public var framesReceived = 0
    /// Gaps found in other relays' room streams, and the messages missing in them: lost between
    /// relays (NATS core delivers at most once). A lost presence is repaired (every relay is asked
    /// to announce again); lost frames are reported here, not repaired.
    public var gaps = 0
    /// Messages missing in those gaps.
    public var messagesLost = 0
    /// Messages older than one already taken from the same stream (dropped).
    public var staleDropped = 0
    /// Messages that did not parse (dropped).
    public var malformed = 0
    /// Routed data messages from other relays that never arrived (found by the data count every
    /// message carries), among `messagesLost`.
    public var dataLost = 0
    /// Sessions of other relays' members reported to the receivers here as having lost messages
    /// between relays (`senderSessionEnded` with reason `lostBetweenRelays`).
    public var sessionsReportedLost = 0
    /// Frames from a member the relay has not heard announced (dropped).
    public var unknownSender = 0
    /// Announced members whose peer ID is already in the room here (two relays admitted the same
    /// peer at once): the remote one is left out.
    public var peerConflicts = 0
    /// Subgroup frames from another relay for a subgroup, or from a sender not subscribed to
    /// it, that this relay has not heard announced (dropped; the next announcement repairs it).
    public var unknownSubgroup = 0
    /// Labeled-channel frames from another relay for a channel, or from a sender that declared
    /// no sending direction on it, that this relay has not heard announced (dropped).
    public var unknownChannel = 0
    /// Channels another relay announced with options that disagree with the channel of that
    /// label here (two relays' first declarers disagreed): its members there are left out of it.
    public var channelMismatches = 0
    /// Track frames from another relay for a track it has not announced (dropped).
    public var unknownTrack = 0
    /// Announced members (or subgroups) left out because the room is full here.
    public var overLimit = 0
    /// Times another relay fell silent in a room for `RelayClusterLiveness.silenceTimeout`: its
    /// members there were reported left.
    public var relaysTimedOut = 0

    // MARK: Backpressure and extensions across relays (room streams)

    /// `pressure` messages published: a receiver here started or stopped holding its room back.
    public var pressureAnnounced = 0
    /// Times another relay's pressure started holding a room's senders here back.
    public var remotePressureApplied = 0
    /// Members' `extension` frames published for a member of another relay.
    public var extensionsForwarded = 0
    /// Extension frames from another relay handed to a member here.
    public var extensionsReceived = 0

    // MARK: The node stream (online status, invitations)

    /// Node messages published (numbered or not, resends included).
    public var nodeMessagesPublished = 0
    /// Node messages from other relays taken (numbered ones, once each).
    public var nodeMessagesReceived = 0
    /// Gaps found in other relays' node streams (each one asked to be resent).
    public var nodeGaps = 0
    /// Messages of this relay's node stream sent again because another relay missed them.
    public var nodeMessagesResent = 0
    /// Missing node messages that arrived once asked for again (repaired).
    public var nodeMessagesRepaired = 0
    /// Missing node messages that could not be had again (the sender's ring no longer held them,
    /// or no answer within `silenceTimeout`): lost, never silently. Online status is then asked
    /// for whole again; a lost invitation request or reply ends in `relayUnavailable` for the peer
    /// that asked; a lost event is counted here only.
    public var nodeMessagesLost = 0
    /// Node messages already taken (sent again for another relay, or repeated): dropped.
    public var nodeDuplicates = 0
    /// Node messages that did not parse (dropped; counted in `malformed` as well).
    public var nodeMalformed = 0
    /// Relays whose node stream fell silent for `silenceTimeout`: their online peers went
    /// offline here, and the invitations they were home to ended for the peers here.
    public var nodesTimedOut = 0
    /// Messages from relays beyond the table's cap (`RelayClusterNodeLimits.maxNodes`), dropped.
    public var nodesOverLimit = 0
    /// Peers other relays said are online that the table's cap left out (`maxRemoteOnline`).
    public var onlineOverLimit = 0
    /// Invitation events sent to another relay for its peers (each event once per relay).
    public var invitationEventsForwarded = 0
    /// Invitation events from another relay handed to peers here (each once, however many
    /// connections the peer has).
    public var invitationEventsReceived = 0
    /// Answers and cancels sent to the invitation's home relay.
    public var invitationRequestsForwarded = 0
    /// Answers and cancels from other relays' peers handled here, as the invitation's home.
    public var invitationRequestsServed = 0
    /// Forwarded requests that got no reply within `remoteRequestTimeout` (the peer was refused
    /// `relayUnavailable`), or whose table was full.
    public var invitationRequestsUnanswered = 0
    /// Replies for a request this relay no longer waits for (it timed out, or the peer left).
    public var invitationRepliesUnmatched = 0
    /// Open invitations whose home relay died: their invitees here were told `invitationCancelled`
    /// (`inviterLeft`).
    public var invitationsLostWithRelay = 0
    /// Invitations of other relays forgotten here before they ended, to keep the table within
    /// its cap (a later answer here is refused `unknownInvitation`).
    public var invitationProxiesEvicted = 0

    // MARK: The roster (one order of joins and leaves for every relay: RelayMachine+Roster.swift)

    /// Roster records taken, in the stream's order (this relay's own included).
    public var rosterRecordsApplied = 0
    /// Roster records that did not parse (skipped, by every relay alike).
    public var rosterMalformed = 0
    /// Roster records taken already (a redelivery, or the stream read again after a gap): skipped.
    public var rosterSkipped = 0
    /// Times a roster record did not reach this relay (a sequence skipped, e.g. a full buffer):
    /// the stream is then read again from the missing record, so nothing is lost for good.
    public var rosterGaps = 0
    /// Roster records handed to the driver to append.
    public var rosterRecordsPublished = 0
    /// Joins the roster refused: another relay's join under the same name came first in it (or
    /// every member number was taken). A join here is refused `alreadyJoined` (or `roomFull`).
    public var rosterJoinsRefused = 0
    /// Routed frames from a member of another relay that arrived before the roster said it
    /// joined: held until it does.
    public var heldForRoster = 0
    /// Of those, frames dropped: more waited than a room holds (4,096 frames or 4 MiB), or the member's
    /// join never came within `silenceTimeout`. If the join comes after all, each reliable session
    /// that lost frames is reported lost to its receivers, as frames lost between relays are
    /// (counted in `sessionsReportedLost`).
    public var heldDropped = 0
    /// Times this relay read the roster's stream anew (after a lost record, or a reconnection)
    /// and found records gone that it had not read: removed as their room emptied, while this
    /// relay was behind or cut off for longer than `rosterCompactionDelay`. Each time it started
    /// over (its members disconnected `removedByCluster`, the stream read again from its start);
    /// never seen in a relay that keeps up.
    public var rosterRemovedUnread = 0

    /// All counters at zero.
    public init() {}
}
