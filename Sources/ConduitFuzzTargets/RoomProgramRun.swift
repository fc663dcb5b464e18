import ConduitCore
import ConduitRelayCore
import ConduitRooms

/// A relay machine and two conference machines, alice and bob, wired through in-memory queues
/// (each direction in order, nothing lost), with a third link the fuzzer owns: the world of the
/// `conference-machine` and `relay-machine` targets. The start byte picks a starting state (links
/// open; alice's join answered but the answer in flight; both joined; with a subgroup, sessions
/// and a track open and messages exchanged; after bob or alice left), with default or small relay
/// caps, reached by real traffic; then a program drives it.
struct RoomProgramRun {
    static let room: RoomID = "standup"
    static let peers: [PeerID] = ["alice", "bob"]
    static let streams: [SessionKey] = [SessionKey(streamID: 100), SessionKey(streamID: 101), SessionKey(streamID: 200, subgroup: "breakout")]
    static let types: [SessionType] = [.reliableMessage, .unreliableMessage, .reliableBytes, .unreliableBytes]
    /// The link the fuzzer writes to the relay on (never a member's: it cannot speak as alice or bob).
    static let attacker = RelayConnectionID(3)

    var check: Invariants
    var now = ConduitInstant(nanoseconds: 1_000_000_000)
    var relay: RelayMachine
    var clients: [ConferenceMachine]
    var ledgers: [SessionEventLedger]
    /// Frames in flight from the relay to each client, and from each client to the relay.
    var toClient: [[[UInt8]]] = [[], []]
    var toRelay: [[[UInt8]]] = [[], []]
    /// The relay closed the client's link: once its last frames are delivered, the client hears of it.
    var closing = [false, false]
    var linkOpen = [true, true]
    var attackerOpen = false
    /// Real frames: what the relay sent alice, and what the clients sent the relay.
    var fromRelay: [[UInt8]] = []
    var fromClients: [[UInt8]] = []
    /// The messages bob's app queued on stream 101 (message types, each with a traced index),
    /// whether each went on a reliable session, and the indexes alice delivered.
    var sentByBob: [[UInt8]] = []
    var sentByBobReliably: [Bool] = []
    var deliveredToAlice: [Int] = []
    /// Streams alice's app declined (so her app at the end declines each at most once).
    var declinedByAlice: Set<SessionKey> = []
    /// Alice got something the relay did not send (the `conference-machine` target's attack).
    var aliceAttacked = false

    init(check: Invariants, start: UInt8) throws(FuzzFailure) {
        self.check = check
        var configuration = RelayConfiguration(vanishTimeout: .seconds(60))
        if start & 0x80 != 0 {
            configuration = RelayConfiguration(
                maxRooms: 2, maxMembersPerRoom: 3, maxSubgroupsPerRoom: 2, maxSubscriptionsPerMember: 2, maxSessionsPerMember: 4,
                maxPendingConnections: 2, joinTimeout: .seconds(2), maxJoinAttemptsPerSecond: 5, maxQueuedBytesPerReceiver: 40_000,
                receiverHighWater: 20_000, laggingAfter: .milliseconds(500), isolateAfter: .seconds(2),
                maxUnreliableQueuedBytesPerReceiver: 10_000, vanishTimeout: .seconds(8)
            )
        }
        relay = RelayMachine(configuration: configuration, invitationKey: 7)
        let session = CallConfiguration(fragmentSize: 600, rateLimit: .unlimited)
        clients = Self.peers.map { peer in
            ConferenceMachine(room: Self.room, localPeer: peer, token: [1], configuration: .init(session: session, pingInterval: .seconds(1), maxSenders: 8), now: .zero)
        }
        ledgers = Self.peers.map { SessionEventLedger(check: check, side: "\($0)") }
        for side in 0..<2 { _ = relay.connectionOpened(RelayConnectionID(UInt64(side + 1)), now: now) }
        try reach(state: Int(start & 0x7F) % 6)
    }

    mutating func reach(state: Int) throws(FuzzFailure) {
        guard state > 0 else { return }
        try transmit()
        try deliverToRelay(count: 1)  // alice's join: authorized; the relay's answer stays in flight
        try service()
        guard state > 1 else { return }
        try settle()
        guard state > 2 else { return }
        try app(0, 6, 0x00)  // alice subscribes to "breakout"
        try app(1, 6, 0x00)  // bob too
        try settle()
        try app(0, 0, 0x00)  // alice opens 100 (reliable message)
        try app(1, 0, 0x10)  // bob opens 101 (reliable message)
        try app(1, 0, 0x21)  // bob opens 200 in "breakout" (unreliable message)
        try app(0, 8, 0x00)  // alice publishes "camera"
        try settle()
        try app(0, 2, 0x10)  // alice accepts 101
        try app(1, 2, 0x00)  // bob accepts 100
        try app(1, 9, 0x00)  // bob subscribes to alice's camera
        for size: UInt8 in [0, 1, 5, 15] {
            try app(0, 1, size)  // on 100
            try app(1, 1, 0x10 | size)  // on 101
            try app(0, 10, size)  // on the camera
        }
        try settle()
        if state == 4 { try app(1, 5, 0) }  // bob leaves
        if state == 5 { try app(0, 5, 0) }  // alice leaves
        try settle()
    }

    /// Runs everything until nothing moves (bounded).
    mutating func settle() throws(FuzzFailure) {
        for _ in 0..<30 {
            try transmit()
            try service()
            guard toRelay.contains(where: { !$0.isEmpty }) || toClient.contains(where: { !$0.isEmpty }) else { return }
            try deliverToRelay(count: 64)
            try service()
            for side in 0..<2 { try deliverToClient(side, count: 64) }
        }
    }

    /// The clients write what they have.
    mutating func transmit() throws(FuzzFailure) {
        for side in 0..<2 where linkOpen[side] {
            var batch = DatagramBatch()
            clients[side].pollTransmit(now: now, into: &batch, maxBytes: 64 * 1_024)
            batch.forEachDatagram { datagram in
                toRelay[side].append(Array(datagram))
                if fromClients.count < 64 { fromClients.append(Array(datagram)) }
            }
            try collect(side)
        }
    }

    /// Takes the relay's actions as its server does: authorize (a token [1] is good, except the
    /// attacker's for alice or bob), write outboxes, close links.
    mutating func service() throws(FuzzFailure) {
        var closed: Set<RelayConnectionID> = []
        var taken = 0
        while let action = relay.pollAction() {
            taken += 1
            try check.require(taken < 10_000, "relay: over 10,000 actions in one service: a loop")
            switch action {
            case .authorize(let id, let request):
                // The attacker holds no token for alice or bob: only for a name of its own.
                if request.token.first == 1, id != Self.attacker || !Self.peers.contains(request.peer) {
                    relay.admit(id, grant: RelayGrant(room: request.room, peer: request.peer, canPublish: true, canSubscribe: true), now: now)
                } else {
                    relay.refuse(id, .tokenTampered, now: now)
                }
            case .transmit(let id):
                drainOutbox(id)
            case .close(let id):
                try check.require(closed.insert(id).inserted, "relay: close(\(id)) twice")
                drainOutbox(id)
                if id == Self.attacker {
                    relay.connectionClosed(id, now: now)
                    attackerOpen = false
                } else {
                    closing[Int(id.rawValue) - 1] = true
                }
            case .resumeReading:
                break  // bob's and alice's queues are read again when the relay may read them
            }
        }
    }

    mutating func drainOutbox(_ id: RelayConnectionID) {
        var batch = DatagramBatch()
        relay.pollTransmit(id, into: &batch, maxBytes: .max, now: now)
        guard id != Self.attacker else { return }
        let side = Int(id.rawValue) - 1
        guard linkOpen[side] else { return }
        batch.forEachDatagram { datagram in
            toClient[side].append(Array(datagram))
            if side == 0, fromRelay.count < 64 { fromRelay.append(Array(datagram)) }
        }
    }

    /// Client frames reach the relay in order, as far as the relay may read each link.
    mutating func deliverToRelay(count: Int) throws(FuzzFailure) {
        for side in 0..<2 {
            let id = RelayConnectionID(UInt64(side + 1))
            var delivered = 0
            while delivered < count, !toRelay[side].isEmpty, linkOpen[side], relay.mayRead(id, now: now) {
                relay.handle(id, datagram: toRelay[side].removeFirst(), now: now)
                delivered += 1
            }
        }
    }

    /// Relay frames reach client `side` in order; a link the relay closed ends after its last frame.
    mutating func deliverToClient(_ side: Int, count: Int) throws(FuzzFailure) {
        var delivered = 0
        // As a driver: a client's link is not read while it holds a reliable stream's limit.
        while delivered < count, !toClient[side].isEmpty, !clients[side].isHoldingBeyondLimit {
            toClient[side].removeFirst().withUnsafeBytes { clients[side].handle(datagram: $0, now: now) }
            delivered += 1
        }
        if toClient[side].isEmpty, closing[side], linkOpen[side] { closeLink(side) }
        try collect(side)
    }

    /// Client `side`'s link ends: the client and the relay hear of it.
    mutating func closeLink(_ side: Int) {
        linkOpen[side] = false
        closing[side] = false
        clients[side].linkClosed()
        relay.connectionClosed(RelayConnectionID(UInt64(side + 1)), now: now)
        toRelay[side].removeAll()
        toClient[side].removeAll()
    }

    mutating func advance(_ step: Duration) throws(FuzzFailure) {
        now = now + step
        relay.handleTimeout(now: now)
        try checkTimeoutMovedOn(relay.nextTimeout(), now: now, check, "relay")
        for side in 0..<2 where linkOpen[side] { clients[side].handleTimeout(now: now) }
        // A due ping is queued by the timeout and written by the transmit that follows it.
        try transmit()
        for side in 0..<2 where linkOpen[side] {
            try checkTimeoutMovedOn(clients[side].nextTimeout(), now: now, check, "\(Self.peers[side])")
        }
        try service()
    }
}
