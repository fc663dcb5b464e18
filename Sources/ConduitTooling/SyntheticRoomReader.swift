package import ConduitCore
import ConduitRooms

/// The read side of one synthetic member of the in-process room bench: it takes each batch the
/// relay wrote to its link and looks at every datagram in place, never copying or reassembling.
///
/// - Room control (kind 4: `joined`, peer lists, `refused`, `disconnect`) is parsed with
///   `RoomControlFrame.parse`; peer lists say which member number is which sender (each shard
///   numbers the room's members its own way, so a receiver learns the numbers of its own shard).
/// - Relayed frames (kind 3) are checked by their `RelayEnvelope` and their inner frame's header
///   only: a data frame's `DataFrameHeader` (stream, length, one fragment, message ID), a session
///   control frame's `ControlFrame` (open, close).
///
/// Per sender, the message IDs must come 0, 1, 2, … each exactly once: a lower ID than due is a
/// duplicate, a higher one a reordering (or a gap, which also shows as missing at the end). A
/// receiver is done when every sender's `sessionClose` arrived: the relay forwards each sender's
/// frames in order, so nothing of that sender can follow its close.
package struct SyntheticRoomReader {
    /// What one receiver saw.
    package struct Tally: Sendable, Hashable {
        package var delivered = 0
        package var duplicates = 0
        package var outOfOrder = 0
        /// Frames that were not what a synthetic sender sends (wrong stream or size, or not ours).
        package var malformed = 0
        /// Data from a member number no peer list named as a sender.
        package var unknownSender = 0
        /// When the last in-order data frame arrived (nil: none did).
        package var lastDelivery: ContinuousClock.Instant?
        /// Why the reader stopped: "complete" (every sender closed its session), or how the link ended.
        package var ended = ""
    }

    let link: any TransportLink
    let status: SyntheticMemberStatus
    /// The receiver's index in `progress`, nil for a sender's reader (senders subscribe to nothing).
    let receiver: Int?
    let progress: SyntheticRoomProgress
    let senders: Int
    let size: Int

    private var tally = Tally()
    private var ownMember: UInt16?
    private var peers: [UInt16: PeerID] = [:]
    /// Sender index by member number (-1: not a sender, or not known yet): an array, not a
    /// dictionary, because it is looked up once per datagram.
    private var senderOfMember: [Int] = []
    private var nextMessage: [UInt32]
    private var opened: [Bool]
    private var closed: [Bool]
    private var closedCount = 0

    package init(link: any TransportLink, status: SyntheticMemberStatus, receiver: Int?, progress: SyntheticRoomProgress, senders: Int, size: Int) {
        self.link = link
        self.status = status
        self.receiver = receiver
        self.progress = progress
        self.senders = senders
        self.size = size
        nextMessage = Array(repeating: 0, count: senders)
        opened = Array(repeating: false, count: senders)
        closed = Array(repeating: false, count: senders)
    }

    /// The bench names sender `index` this prefix and the index (its token's peer ID).
    package static let senderPrefix = "sender-"

    /// Reads until every sender's session closed (a receiver) or the link ends.
    package mutating func run() async -> Tally {
        while true {
            let batch: DatagramBatch?
            do { batch = try await link.read() } catch { batch = nil }
            guard let batch else {
                tally.ended = status.ended ?? "the link closed"
                status.end(tally.ended)
                // A receiver gone before the end would hold its senders' windows for good: they
                // send on, and the run reports what this one missed.
                if receiver != nil, closedCount < senders { progress.release() }
                return tally
            }
            let before = tally.delivered
            batch.forEachDatagram { take($0) }
            if tally.delivered > before {
                tally.lastDelivery = .now
                if let receiver {
                    for sender in 0..<senders { progress.store(receiver: receiver, sender: sender, messages: Int(nextMessage[sender])) }
                }
            }
            if receiver != nil, closedCount == senders {
                tally.ended = "complete"
                return tally
            }
        }
    }

    private mutating func take(_ datagram: UnsafeRawBufferPointer) {
        switch RelayFrameKind.peek(datagram) {
        case .relayed?:
            guard let envelope = try? RelayEnvelope.parse(datagram) else {
                tally.malformed += 1
                return
            }
            takeRelayed(UnsafeRawBufferPointer(rebasing: datagram[RelayEnvelope.size...]), from: envelope.member)
        case .room?:
            guard let frame = try? RoomControlFrame.parse(datagram) else {
                tally.malformed += 1
                return
            }
            takeRoomControl(frame)
        default:
            tally.malformed += 1
        }
    }

    private mutating func takeRelayed(_ inner: UnsafeRawBufferPointer, from member: UInt16) {
        let index = Int(member)
        guard index < senderOfMember.count, case let sender = senderOfMember[index], sender >= 0 else {
            tally.unknownSender += 1
            return
        }
        switch try? FrameKind.peek(inner) {
        case .data?:
            guard let (header, _) = try? DataFrameHeader.parse(inner), header.streamID == SyntheticRoomFrames.stream,
                Int(header.totalLength) == size, header.fragmentOffset == 0, header.fragmentCount == 1
            else {
                tally.malformed += 1
                return
            }
            let due = nextMessage[sender]
            if header.messageID < due {
                tally.duplicates += 1
                return
            }
            // Data before its session's open, or past a gap, is out of order.
            if header.messageID > due || !opened[sender] { tally.outOfOrder += 1 }
            nextMessage[sender] = header.messageID + 1
            tally.delivered += 1
        case .control?:
            switch try? ControlFrame.parse(inner) {
            case .sessionOpen?:
                opened[sender] = true
            case .sessionClose?:
                if !closed[sender] {
                    closed[sender] = true
                    closedCount += 1
                }
            default:
                tally.malformed += 1
            }
        case nil:
            tally.malformed += 1
        }
    }

    private mutating func takeRoomControl(_ frame: RoomControlFrame) {
        switch frame {
        case .joined(let member):
            ownMember = member
            status.joined(as: member)
        case .peers(let update):
            if update.isSnapshot { peers.removeAll() }
            for left in update.left { peers[left] = nil }
            for member in update.joined { peers[member.member] = member.peer }
            remapSenders()
        case .refused(let refusal, let text):
            status.end("refused: \(refusal) \(text)")
        case .disconnect(let reason, let text):
            status.end("disconnected: \(reason) \(text)")
        default:
            break
        }
    }

    /// Rebuilds the sender index table from the peer list (on peer-list updates only).
    private mutating func remapSenders() {
        let highest = Int(peers.keys.max() ?? 0)
        senderOfMember = Array(repeating: -1, count: highest + 1)
        for (member, peer) in peers {
            guard peer.rawValue.hasPrefix(Self.senderPrefix), let index = Int(peer.rawValue.dropFirst(Self.senderPrefix.count)), (0..<senders).contains(index) else { continue }
            senderOfMember[Int(member)] = index
        }
        status.know(others: peers.keys.filter { $0 != ownMember }.count)
    }
}
