import DequeModule
import ConduitCore
import ConduitRooms

extension RelayMachine {
    struct Connection: Sendable {
        enum Phase: Sendable {
            case awaitingJoin
            case authorizing(RelayJoinRequest)
            /// Verified, and appended to the cluster's roster as `ticket`: answered when the
            /// record is read back (RelayMachine+Roster.swift).
            case admitting(RelayJoinRequest, RelayGrant, ticket: UInt64, since: ConduitInstant)
            case member(RoomID, UInt16)
            case closing
        }

        var phase: Phase = .awaitingJoin
        /// Frames for this receiver, oldest first; shared arrays, so fan-out costs no copies.
        var outbox = Deque<[UInt8]>()
        /// When each frame in `outbox` was queued (a track frame's lifetime counts the wait).
        var queuedAt = Deque<ConduitInstant>()
        /// How the link carries each frame in `outbox` (its channel and delivery).
        var tags = Deque<FrameTag>()
        var outboxBytes = 0
        /// A `.transmit` action is outstanding (one per non-empty outbox, not one per frame).
        var transmitSignalled = false
        var lastHeard: ConduitInstant
        /// When the link opened: its join is due `joinTimeout` later, whatever else it sends.
        var openedAt: ConduitInstant
        /// Unreliable frames dropped for this receiver.
        var unreliableDropped = 0
        /// When the queue went above the high-water mark (nil: below it, or back under half).
        var fullSince: ConduitInstant?
        /// Above the mark for `laggingAfter` while most of the room was not: no longer holds the
        /// room's senders back.
        var lagging = false
        /// When the queue last came back under half the mark (RelayMachine+Backpressure.swift:
        /// whether the others were full too while this one was).
        var fullEndedAt: ConduitInstant?
        /// When its link last took something from the queue (isolateAfter counts from here).
        var lastTaken: ConduitInstant?
        /// When the queue went above the mark, kept until it is back under half of it (unlike
        /// `fullSince`, which a slow room's restart moves): isolateAfter counts from here too.
        var aboveMarkSince: ConduitInstant?
        /// Isolated as a slow receiver: told why, and given nothing more, but still a member
        /// whose frames are read and forwarded until its link ends (RelayMachine+Isolation.swift).
        var isolated = false

        /// Drops everything queued for this receiver.
        mutating func clearOutbox() {
            outbox.removeAll()
            queuedAt.removeAll()
            tags.removeAll()
            outboxBytes = 0
        }

        /// Queues `frame` under the receiver's caps (see `RelayMachine.deliver`). Called as
        /// `connections.values[index].enqueue(…)`: through the index the entry is changed in place.
        mutating func enqueue(_ frame: [UInt8], tag: FrameTag, now: ConduitInstant, configuration: RelayConfiguration) -> EnqueueOutcome {
            let queued = outboxBytes
            let reliable = tag.delivery.isFullyReliable
            if !reliable, queued + frame.count > configuration.maxUnreliableQueuedBytesPerReceiver {
                unreliableDropped += 1
                return .droppedUnreliable
            }
            if reliable, queued + frame.count > configuration.maxQueuedBytesPerReceiver { return .slow }
            outbox.append(frame)
            queuedAt.append(now)
            tags.append(tag)
            outboxBytes += frame.count
            let signal = !transmitSignalled
            transmitSignalled = true
            // Above the high-water mark: noted here, while the connection is at hand.
            let becameFull = fullSince == nil && outboxBytes > configuration.receiverHighWater
            if becameFull {
                fullSince = now
                aboveMarkSince = now
            }
            return .queued(signal: signal, becameFull: becameFull)
        }

        /// Moves queued frames, oldest first, into `batch` while they fit in `maxBytes` (at least
        /// one); with `now`, a data-track frame's remaining lifetime is reduced by the time it was
        /// held here, and one whose lifetime ran out is dropped. Returns the frames moved and dropped.
        mutating func drain(into batch: inout DatagramBatch, maxBytes: Int, now: ConduitInstant?) -> (moved: Int, expired: Int) {
            var moved = 0
            var expired = 0
            while let frame = outbox.first, batch.isEmpty || batch.byteCount + frame.count <= maxBytes {
                let heldSince = queuedAt.removeFirst()
                let tag = tags.removeFirst()
                outbox.removeFirst()
                outboxBytes -= frame.count
                if let now, let lifetime = TrackFrameHeader.remainingLifetime(frame) {
                    let held = (now - heldSince).nanosecondsClamped / 1_000_000
                    guard held < Int64(lifetime) else {
                        expired += 1
                        continue
                    }
                    var patched = frame
                    TrackFrameHeader.setRemainingLifetime(&patched, milliseconds: lifetime - UInt32(held))
                    batch.append(patched, tag: tag.withRemainingLifetime(milliseconds: lifetime - UInt32(held)))
                } else {
                    batch.append(frame, tag: tag)
                }
                moved += 1
            }
            if outbox.isEmpty { transmitSignalled = false }
            return (moved, expired)
        }
    }

    /// Where a frame queued for a receiver left its queue (see ``Connection/enqueue(_:tag:now:configuration:)``).
    enum EnqueueOutcome {
        /// Queued; `signal` if the driver must now be told to write this connection, `becameFull`
        /// if the queue just went above the high-water mark.
        case queued(signal: Bool, becameFull: Bool)
        case droppedUnreliable
        case slow
    }

    struct Member: Sendable {
        let connection: RelayConnectionID
        let peer: PeerID
        let dataSessionsSupported: Bool
        let grant: RelayGrant
        /// Subgroup IDs this member is subscribed to.
        var subscriptions: Set<UInt16> = []
        /// Streams this receiver declared unsupported (`subgroupID << 16 | streamID`).
        var unsupported: Set<UInt32> = []
        /// Sessions this member sent on (`subgroupID << 16 | streamID`), so that leaving a
        /// subgroup can close them for the remaining members.
        var sessions: [UInt32: SessionType] = [:]
        /// A member connected to another relay of the cluster (nil: connected here).
        var origin: RemoteMemberKey? = nil
        /// This relay's roster ticket for a member connected here (nil: no roster).
        var ticket: UInt64? = nil
    }

    struct Subgroup: Sendable {
        let name: SubgroupName
        let dataSession: Bool
        var subscribers: Set<UInt16> = []
    }

    struct Track: Sendable {
        let info: TrackInfo
        var subscribers: Set<UInt16> = []
        /// Other relays with a subscriber to this (local publisher's) track: its frames go to the cluster.
        var remoteSubscribers: Set<RelayNodeID> = []
    }

    struct Channel: Sendable {
        let declaration: ChannelDeclaration
        /// Who declared the label, and which way.
        var directions: [UInt16: ChannelDeclaration.Direction]
    }

    /// A member connected here that may receive: what a frame to the whole room is queued for.
    struct LocalReceiver: Sendable {
        let member: UInt16
        let connection: RelayConnectionID
        /// The member declared some stream unsupported (its set is then looked up per frame).
        let hasUnsupported: Bool
    }

    struct Room: Sendable {
        var members: [UInt16: Member] = [:] {
            // Any change may change who receives: the list is made again when next needed.
            didSet { receivers = nil }
        }
        /// `localReceivers()`, while `members` has not changed since it was made.
        private var receivers: [LocalReceiver]?
        var channels: [UInt16: Channel] = [:]
        var channelIDs: [ChannelLabel: UInt16] = [:]
        var nextChannelID: UInt16 = 1
        var tracks: [UInt16: Track] = [:]
        var nextTrackID: UInt16 = 1
        var subgroups: [UInt16: Subgroup] = [:]
        var subgroupIDs: [SubgroupName: UInt16] = [:]
        var nextSubgroupID: UInt16 = 1
        var nextMember: UInt16 = 1
        /// The version of the last update sent (a new joiner's snapshot carries it).
        var version: UInt32 = 0
        /// Changes not yet announced: coalesced until `flushDue`.
        var pendingJoined: [UInt16] = []
        var pendingLeft: [UInt16] = []
        var flushDue: ConduitInstant?
        /// Cluster (RelayMachine+Cluster.swift): other relays' members here by their key, this
        /// relay's stream for the room (epoch, last sequence), where other relays' streams stand.
        var remote: [RemoteMemberKey: UInt16] = [:]
        var clusterEpoch: UInt32 = 0
        var clusterSequence: UInt64 = 0
        var clusterDataCount: UInt64 = 0
        var clusterInbound: [RelayNodeID: ClusterStreamPosition] = [:]
        var remoteLastHeard: [RelayNodeID: ConduitInstant] = [:]
        /// Other relays' subgroup numbers in this room, and this relay's number for each.
        var remoteSubgroups: [RelayNodeID: [UInt16: UInt16]] = [:]
        /// Other relays' labeled-channel numbers in this room, and this relay's number for each.
        var remoteChannels: [RelayNodeID: [UInt16: UInt16]] = [:]
        /// Other relays' track numbers in this room, and this relay's number for each.
        var remoteTracks: [RelayNodeID: [UInt16: UInt16]] = [:]
        /// A tracks message of this relay listed something for the room: it keeps announcing them.
        var tracksAnnounced = false
        /// What this relay last told the others: a receiver here holds the room back
        /// (RelayMachine+ClusterPressure.swift).
        var pressureAnnounced = false
        /// Other relays that hold the room back: its senders here wait while one does.
        var remotePressure: Set<RelayNodeID> = []
        /// Roster (RelayMachine+Roster.swift): frames from members of other relays whose join
        /// record has not arrived, their bytes, and relays that announced such members.
        var heldForRoster = Deque<HeldFrame>()
        var heldBytes = 0
        /// Reliable sessions of members not yet in the roster whose held frames were dropped
        /// (their relay's session keys), to report once each member's record comes.
        var heldLosses: [RemoteMemberKey: [UInt32: HeldLoss]] = [:]
        var awaitingRoster: Set<RelayNodeID> = []

        /// The members connected here (not to another relay or shard) that may receive, in
        /// member order: made from `members` after each change, then kept, so a frame to the whole
        /// room costs a walk over a small array of plain values.
        mutating func localReceivers() -> [LocalReceiver] {
            if let receivers { return receivers }
            let made = members.filter { $0.value.origin == nil && $0.value.grant.canSubscribe }.sorted { $0.key < $1.key }.map {
                LocalReceiver(member: $0.key, connection: $0.value.connection, hasUnsupported: !$0.value.unsupported.isEmpty)
            }
            receivers = made
            return made
        }

        /// Numbers the room's next cluster message: the room's stream starts an epoch (taken from
        /// `nextEpoch`) with its first message; returns the message's epoch, sequence and data count.
        mutating func stampClusterMessage(isData: Bool, nextEpoch: inout UInt32) -> (epoch: UInt32, sequence: UInt64, dataCount: UInt64) {
            if clusterEpoch == 0 {
                clusterEpoch = nextEpoch
                nextEpoch &+= 1
            }
            clusterSequence += 1
            if isData { clusterDataCount += 1 }
            return (clusterEpoch, clusterSequence, clusterDataCount)
        }

        /// Lists `member` of another relay (key `key`) as number `number` here: a member nothing is
        /// queued for here, with every right (its own relay checked its token).
        mutating func addRemote(_ key: RemoteMemberKey, as number: UInt16, _ member: RoomMember, in roomID: RoomID) {
            let grant = RelayGrant(room: roomID, peer: member.peer, canPublish: true, canSubscribe: true)
            members[number] = Member(connection: .clusterMember, peer: member.peer, dataSessionsSupported: member.dataSessionsSupported, grant: grant, origin: key)
            remote[key] = number
        }

        /// The next free member number (never 0, which means "everyone").
        mutating func allocateMember() -> UInt16 {
            while members[nextMember] != nil || nextMember == 0 { nextMember &+= 1 }
            defer { nextMember &+= 1 }
            return nextMember
        }

        mutating func allocateChannelID() -> UInt16 {
            while channels[nextChannelID] != nil || nextChannelID == 0 { nextChannelID &+= 1 }
            defer { nextChannelID &+= 1 }
            return nextChannelID
        }

        mutating func allocateTrackID() -> UInt16 {
            while tracks[nextTrackID] != nil || nextTrackID == 0 { nextTrackID &+= 1 }
            defer { nextTrackID &+= 1 }
            return nextTrackID
        }

        mutating func allocateSubgroupID() -> UInt16 {
            while subgroups[nextSubgroupID] != nil || nextSubgroupID == 0 { nextSubgroupID &+= 1 }
            defer { nextSubgroupID &+= 1 }
            return nextSubgroupID
        }
    }

    @inlinable static func sessionKey(stream: UInt16, subgroupID: UInt16) -> UInt32 {
        UInt32(subgroupID) << 16 | UInt32(stream)
    }
}
