import ConduitCore
import ConduitRooms
import ConduitRelayCore
import ConduitRelay
import Testing

/// The relay's limits on links that have not joined, on virtual time: a join deadline pings do not
/// extend, eviction of the oldest waiting link, the token size and the join rate, each counted and
/// each answered with a typed refusal the client sees.
@Suite struct RelayAdmissionTests {
    static let start = ConduitInstant(nanoseconds: 1_000_000_000)
    static let ping = RoomControlFrame.ping.encoded

    static func join(_ peer: PeerID, token: [UInt8]? = nil) -> [UInt8] {
        RoomControlFrame.join(room: "room", peer: peer, dataSessionsSupported: true, token: token ?? Array(RoomHarness.token(peer: peer).utf8)).encoded
    }

    /// Runs the machine's actions as `RelayServer` does (tokens verified by the real authority);
    /// returns the links it was told to close, in order.
    static func drive(_ relay: inout RelayMachine, now: ConduitInstant) -> [RelayConnectionID] {
        var authority = RelayTokenAuthority(secret: RoomHarness.secret)
        var closed: [RelayConnectionID] = []
        while let action = relay.pollAction() {
            switch action {
            case .authorize(let id, let request):
                switch authority.authorize(request, unixTime: RoomHarness.unixNow) {
                case .success(let grant): relay.admit(id, grant: grant, now: now)
                case .failure(let refusal): relay.refuse(id, refusal, now: now)
                }
            case .close(let id): closed.append(id)
            case .transmit, .resumeReading: break
            }
        }
        return closed
    }

    /// The room control frames the relay queued for `id`.
    static func frames(_ relay: inout RelayMachine, _ id: RelayConnectionID) -> [RoomControlFrame] {
        var batch = DatagramBatch()
        relay.pollTransmit(id, into: &batch, maxBytes: .max)
        var frames: [RoomControlFrame] = []
        batch.forEachDatagram { if let frame = try? RoomControlFrame.parse($0) { frames.append(frame) } }
        return frames
    }

    static func open(_ relay: inout RelayMachine, _ id: RelayConnectionID, now: ConduitInstant) -> Bool {
        relay.connectionOpened(id, now: now)
    }

    static func nextAction(_ relay: inout RelayMachine) -> RelayAction? { relay.pollAction() }

    static func admitted(_ limiter: inout EventRateLimiter, _ attempts: Int, now: ConduitInstant) -> Int {
        (0..<attempts).filter { _ in limiter.admit(now: now) }.count
    }

    static func refusal(in frames: [RoomControlFrame]) -> RelayRefusal? {
        for case .refused(let refusal, _) in frames { return refusal }
        return nil
    }

    @Test func pingsDoNotExtendTheJoinDeadline() {
        var relay = RelayMachine(configuration: .init(joinTimeout: .seconds(5), vanishTimeout: .seconds(15)))
        let id = RelayConnectionID(1)
        #expect(Self.open(&relay, id, now: Self.start))
        #expect(relay.nextTimeout() == Self.start + .seconds(5))
        var now = Self.start
        for _ in 0..<4 {
            now = now + .seconds(1)
            relay.handle(id, datagram: Self.ping, now: now)
            relay.handleTimeout(now: now)
            #expect(Self.drive(&relay, now: now).isEmpty)
        }
        // Still pinging, and the deadline has not moved.
        #expect(relay.nextTimeout() == Self.start + .seconds(5))
        now = Self.start + .seconds(5)
        relay.handleTimeout(now: now)
        #expect(Self.drive(&relay, now: now) == [id])
        #expect(Self.refusal(in: Self.frames(&relay, id)) == .notJoined)
        #expect(relay.statistics.joinDeadlinesMissed == 1)
        #expect(relay.statistics.refusals(.notJoined) == 1)
        #expect(relay.statistics.vanished == 0)
    }

    @Test func aMemberIsNotHeldToTheJoinDeadline() {
        var relay = RelayMachine(configuration: .init(joinTimeout: .seconds(2), vanishTimeout: .seconds(15)))
        let id = RelayConnectionID(1)
        #expect(Self.open(&relay, id, now: Self.start))
        relay.handle(id, datagram: Self.join("alice"), now: Self.start)
        #expect(Self.drive(&relay, now: Self.start).isEmpty)
        #expect(relay.member(of: id) != nil)
        let later = Self.start + .seconds(10)
        relay.handle(id, datagram: Self.ping, now: later)
        relay.handleTimeout(now: later)
        #expect(Self.drive(&relay, now: later).isEmpty)
        #expect(relay.statistics.joinDeadlinesMissed == 0)
    }

    @Test func aFullPendingTableMakesRoomByEvictingTheOldestWaitingLink() {
        var relay = RelayMachine(configuration: .init(maxPendingConnections: 3))
        for number in 1...3 {
            #expect(Self.open(&relay, RelayConnectionID(UInt64(number)), now: Self.start + .milliseconds(number)))
        }
        let newcomer = RelayConnectionID(4)
        let now = Self.start + .milliseconds(10)
        #expect(Self.open(&relay, newcomer, now: now))
        // The oldest waiting link (1) went, with a reason; the others stay.
        #expect(Self.drive(&relay, now: now) == [RelayConnectionID(1)])
        #expect(Self.refusal(in: Self.frames(&relay, RelayConnectionID(1))) == .notJoined)
        #expect(relay.statistics.pendingEvicted == 1)
        relay.handle(newcomer, datagram: Self.join("alice"), now: now)
        #expect(Self.drive(&relay, now: now).isEmpty)
        #expect(relay.members(of: "room").values.contains("alice"))
        // A member holds no pending slot: with 2 and 3 waiting, 5 fills the table and 6 evicts 2,
        // the oldest still waiting.
        #expect(Self.open(&relay, RelayConnectionID(5), now: now))
        #expect(Self.drive(&relay, now: now).isEmpty)
        #expect(Self.open(&relay, RelayConnectionID(6), now: now))
        #expect(Self.drive(&relay, now: now) == [RelayConnectionID(2)])
        #expect(relay.statistics.pendingEvicted == 2)
    }

    @Test func anOversizeTokenIsRefusedAsTooLargeWithoutVerifying() {
        var relay = RelayMachine(configuration: .init(maxTokenBytes: 100))
        let id = RelayConnectionID(1)
        #expect(Self.open(&relay, id, now: Self.start))
        relay.handle(id, datagram: Self.join("alice", token: Array(repeating: UInt8(ascii: "t"), count: 101)), now: Self.start)
        #expect(Self.nextAction(&relay) == .transmit(id))  // the refusal, not an authorize
        #expect(Self.drive(&relay, now: Self.start) == [id])
        #expect(Self.refusal(in: Self.frames(&relay, id)) == .tokenTooLarge)
        #expect(relay.statistics.refusals(.tokenTooLarge) == 1)
    }

    /// A join whose token length field lies is answered at once, not left to a timeout.
    @Test func aLyingTokenLengthIsRefusedAtOnce() {
        let honest = Self.join("alice", token: Array("ct1.a.b".utf8))
        let fieldOffset = RoomControlFrame.headerSize + 1 + 4 + 1 + 5 + 1  // room "room", peer "alice", flags
        #expect(honest.withUnsafeBytes { RoomControlFrame.claimedTokenLength(ofJoin: $0) } == 7)
        for (claimed, expected) in [(60_000, RelayRefusal.tokenTooLarge), (40, .malformed), (3, .malformed)] {
            var lying = honest
            lying[fieldOffset] = UInt8(claimed >> 8)
            lying[fieldOffset + 1] = UInt8(claimed & 0xFF)
            var relay = RelayMachine()
            let id = RelayConnectionID(1)
            #expect(Self.open(&relay, id, now: Self.start))
            relay.handle(id, datagram: lying, now: Self.start)
            #expect(Self.drive(&relay, now: Self.start) == [id])
            #expect(Self.refusal(in: Self.frames(&relay, id)) == expected)
            #expect(relay.statistics.refusals(expected) == 1)
        }
    }

    @Test func joinAttemptsOverTheRateAreRefusedAndCounted() {
        var relay = RelayMachine(configuration: .init(maxJoinAttemptsPerSecond: 2))
        let peers: [PeerID] = ["a", "b", "c", "d"]
        for (index, peer) in peers.enumerated() {
            let id = RelayConnectionID(UInt64(index + 1))
            #expect(Self.open(&relay, id, now: Self.start))
            relay.handle(id, datagram: Self.join(peer), now: Self.start)
        }
        #expect(Self.drive(&relay, now: Self.start) == [RelayConnectionID(3), RelayConnectionID(4)])
        #expect(Self.refusal(in: Self.frames(&relay, RelayConnectionID(3))) == .joinRateLimited)
        #expect(relay.statistics.joinsRateLimited == 2)
        #expect(relay.statistics.joins == 2)
        // Half a second later one more attempt is within the rate.
        let later = Self.start + .milliseconds(500)
        let id = RelayConnectionID(5)
        #expect(Self.open(&relay, id, now: later))
        relay.handle(id, datagram: Self.join("e"), now: later)
        #expect(Self.drive(&relay, now: later).isEmpty)
        #expect(relay.statistics.joins == 3)
    }

    @Test func theRateLimiterAdmitsItsRateAndBurst() {
        var limiter = EventRateLimiter(perSecond: 10, now: Self.start)
        #expect(Self.admitted(&limiter, 12, now: Self.start) == 10)
        #expect(Self.admitted(&limiter, 1, now: Self.start + .milliseconds(99)) == 0)
        #expect(Self.admitted(&limiter, 1, now: Self.start + .milliseconds(100)) == 1)
        // A long idle period refills to one second's worth, no more.
        let idle = Self.start + .seconds(3_600)
        #expect(Self.admitted(&limiter, 12, now: idle) == 10)
    }
}
