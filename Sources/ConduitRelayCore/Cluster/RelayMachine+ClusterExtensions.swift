import ConduitCore
import ConduitRooms

// Room-control `extension` frames between members on different relays. The sender's relay checks
// what it checks for a member of its own (joined, not extension 1, a member other than itself) and
// publishes the frame on the room's stream (`extension`), in order with the sender's data; the
// target's relay stamps the sender with its own member number, as it does for data, and queues it.

extension RelayMachine {
    /// A member's extension frame for a member of another relay.
    mutating func forwardExtension(_ id: UInt8, body: [UInt8], from member: UInt16, to target: RemoteMemberKey, in roomID: RoomID) {
        statistics.cluster.extensionsForwarded += 1
        publishCluster(roomID, .extension(origin: member, targetNode: target.node.rawValue, targetMember: target.member, id: id, body: body))
    }

    /// An extension frame from a member of another relay for a member here.
    mutating func deliverClusterExtension(_ id: UInt8, body: [UInt8], origin: RemoteMemberKey, to target: UInt16, in roomID: RoomID, now: ConduitInstant) {
        guard let sender = rooms[roomID]!.remote[origin] else {
            statistics.cluster.unknownSender += 1
            return
        }
        guard id != RelayInvitations.extensionID, let receiver = rooms[roomID]!.members[target], receiver.origin == nil else {
            return refuseFrame(.unknownDestination)
        }
        // As for a local sender: its name reaches everyone before its first frame does.
        if rooms[roomID]!.pendingJoined.contains(sender) {
            rooms[roomID]!.flushDue = now
            flushPeerLists(now: now)
        }
        statistics.cluster.extensionsReceived += 1
        sendControl(receiver.connection, RoomControlFrame.extension(id: id, member: sender, body: body).encoded)
    }
}
