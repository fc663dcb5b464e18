import ConduitCore
import ConduitRooms
import ConduitRelayCore
import ConduitRelay

/// Wires conference machines to a relay machine in memory, with virtual time and the real token
/// authority, so room behaviour is tested deterministically without tasks or sockets.
struct RoomHarness {
    static let secret = try! RelaySecret(bytes: Array("0123456789abcdef0123456789abcdef".utf8))
    static let unixNow: UInt64 = 1_800_000_000

    struct Client {
        var connection: RelayConnectionID
        var machine: ConferenceMachine
        var events: [ConferenceEvent] = []
        /// Frames the relay has for this client are left in its queue (a receiver that stalls).
        var stalled = false
        /// The client sends nothing (not even pings): it vanished.
        var silent = false
        var closed = false
    }

    var relay: RelayMachine
    var authority = RelayTokenAuthority(secret: RoomHarness.secret)
    var clients: [String: Client] = [:]
    var now = ConduitInstant(nanoseconds: 1_000_000_000)
    var nextConnection: UInt64 = 1

    init(configuration: RelayConfiguration = .init()) {
        relay = RelayMachine(configuration: configuration)
    }

    static func token(
        room: RoomID = "room", peer: PeerID, publish: Bool = true, subscribe: Bool = true,
        subgroups: Set<SubgroupName>? = nil, expiresAt: UInt64 = unixNow + 3_600
    ) -> String {
        RelayToken(room: room, peer: peer, canPublish: publish, canSubscribe: subscribe, allowedSubgroups: subgroups, expiresAt: expiresAt)
            .signed(with: secret)
    }

    /// Opens a link for `name` and sends its join; pumps until quiet.
    mutating func join(_ name: String, room: RoomID = "room", token: String? = nil, session: CallConfiguration = .init(rateLimit: .unlimited), channels: [ChannelDeclaration] = []) {
        let peer = PeerID(stringLiteral: name)
        let id = RelayConnectionID(nextConnection)
        nextConnection += 1
        _ = relay.connectionOpened(id, now: now)
        let text = token ?? Self.token(room: room, peer: peer)
        clients[name] = Client(
            connection: id,
            machine: ConferenceMachine(room: room, localPeer: peer, token: Array(text.utf8), configuration: .init(session: session, pingInterval: .seconds(1), channels: channels), now: now)
        )
        pump()
    }

    /// Moves frames both ways and runs the relay's actions until nothing moves.
    mutating func pump() {
        var moved = true
        var rounds = 0
        while moved, rounds < 10_000 {
            moved = false
            rounds += 1
            for name in clients.keys.sorted() where !clients[name]!.closed && !clients[name]!.silent {
                // As the server does: a sender the relay holds back is not read, so its frames
                // wait in its own queues.
                guard relay.mayRead(clients[name]!.connection, now: now) else { continue }
                var batch = DatagramBatch()
                clients[name]!.machine.pollTransmit(now: now, into: &batch)
                drainEvents(name)
                if !batch.isEmpty {
                    relay.handle(clients[name]!.connection, batch: batch, now: now)
                    moved = true
                }
            }
            while let action = relay.pollAction() {
                moved = true
                switch action {
                case .authorize(let id, let request):
                    switch authority.authorize(request, unixTime: Self.unixNow) {
                    case .success(let grant): relay.admit(id, grant: grant, now: now)
                    case .failure(let refusal): relay.refuse(id, refusal, now: now)
                    }
                case .transmit(let id):
                    deliver(to: id)
                case .resumeReading:
                    break  // the next round reads it again
                case .close(let id):
                    // As the server does: an isolated member's link is read to its end first.
                    // Here that is what its client had sent before it hears why (a `silent`
                    // client's frames stand for what its link accepted while the relay left it unread).
                    if relay.readsUntilLinkEnds(id), let name = name(of: id) {
                        var batch = DatagramBatch()
                        clients[name]!.machine.pollTransmit(now: now, into: &batch)
                        relay.handle(id, batch: batch, now: now)
                    }
                    // The relay's last frame (the reason) goes out even to a stalled receiver.
                    deliver(to: id, evenIfStalled: true)
                    if let name = name(of: id) {
                        clients[name]!.machine.linkClosed()
                        drainEvents(name)
                        clients[name]!.closed = true
                    }
                    relay.connectionClosed(id, now: now)
                }
            }
            // Stalled receivers' queues are looked at again only when they un-stall.
            for name in clients.keys.sorted() where !clients[name]!.stalled && relay.queuedBytes(clients[name]!.connection) > 0 {
                deliver(to: clients[name]!.connection)
                moved = true
            }
        }
    }

    mutating func deliver(to id: RelayConnectionID, evenIfStalled: Bool = false) {
        guard let name = name(of: id), evenIfStalled || !clients[name]!.stalled, !clients[name]!.closed else { return }
        var batch = DatagramBatch()
        relay.pollTransmit(id, into: &batch, maxBytes: .max, now: now)
        clients[name]!.machine.handle(batch: batch, now: now)
        drainEvents(name)
    }

    func name(of id: RelayConnectionID) -> String? {
        clients.first(where: { $0.value.connection == id })?.key
    }

    mutating func drainEvents(_ name: String) {
        while let event = clients[name]!.machine.pollEvent() { clients[name]!.events.append(event) }
    }

    /// Lets `duration` pass in steps, running every timeout.
    mutating func advance(by duration: Duration, step: Duration = .milliseconds(10)) {
        let end = now + duration
        while now < end {
            now = min(end, now + step)
            relay.handleTimeout(now: now)
            for name in clients.keys.sorted() where !clients[name]!.closed && !clients[name]!.silent {
                clients[name]!.machine.handleTimeout(now: now)
            }
            pump()
        }
    }

    /// Injects raw bytes as if `name`'s client had sent them.
    mutating func inject(_ name: String, _ bytes: [UInt8]) {
        relay.handle(clients[name]!.connection, datagram: bytes, now: now)
        pump()
    }

    mutating func take(_ name: String) -> [ConferenceEvent] {
        defer { clients[name]!.events.removeAll() }
        return clients[name]!.events
    }

    func member(_ name: String) -> UInt16 { clients[name]!.machine.localMember! }

    /// Messages `name` received on `key`, as (sender, text).
    func messages(_ name: String, _ key: SessionKey) -> [(PeerID, String)] {
        clients[name]!.events.compactMap {
            guard case .received(key, let from, .message(let bytes, _)) = $0 else { return nil }
            return (from, String(decoding: bytes, as: UTF8.self))
        }
    }

    mutating func send(_ name: String, _ key: SessionKey, _ text: String) {
        let result = clients[name]!.machine.enqueue(key, bytes: Array(text.utf8), timestamp: 7, now: now)
        precondition({ if case .queued = result { true } else { false } }(), "enqueue failed: \(result)")
        pump()
    }

    /// Makes inbound sessions for every incoming event `name` got so far.
    mutating func acceptAll(_ name: String) {
        for event in clients[name]!.events {
            if case .dataSessionIncoming(let key, _, _) = event, !clients[name]!.machine.isInboundAccepted(key) {
                _ = clients[name]!.machine.makeInbound(key)
            }
        }
        drainEvents(name)
    }
}
